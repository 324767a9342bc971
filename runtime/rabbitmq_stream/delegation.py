"""``ClientConnection`` methods that belong to one of its per-scope parts.

The connection is split by scope (publishers, subscriptions, stream queries), as h2
splits ``H2Connection`` from ``H2Stream``; its methods stay where users and the generated
``HANDLERS`` tables find them (``connection.publish``, ``on_publisher_publish_confirm``).
``Delegated`` is such a method: reading it on a connection gives the part's own bound
method, so a call costs what a call on the part costs (no wrapper runs per confirm or
per chunk), and a subclass may still override it and reach the part with ``super()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

__all__ = ["Delegated"]

P = ParamSpec("P")
R = TypeVar("R")


class Delegated(Generic[P, R]):
    """``method`` of the part held in the attribute ``part`` of the owner's instances."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, P], R]) -> None:
        self.part = part
        self.name = method.__name__
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, obj: None, owner: type[Any] | None = None) -> Delegated[P, R]: ...

    @overload
    def __get__(self, obj: object, owner: type[Any] | None = None) -> Callable[P, R]: ...

    def __get__(
        self, obj: object | None, owner: type[Any] | None = None
    ) -> Delegated[P, R] | Callable[P, R]:
        if obj is None:
            return self
        method: Callable[P, R] = getattr(getattr(obj, self.part), self.name)
        return method
