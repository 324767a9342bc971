"""The one state-machine driver; the machines themselves are generated tables (data).

``generated/<protocol>/<version>/machines.py`` subclasses ``StateMachine`` once per
``machines:`` entry of the IDL and fills in its tables, as h11 keeps
``EVENT_TRIGGERED_TRANSITIONS`` as data.  A table maps ``(state, frame class)`` to rows
``(guard, outcome)``; the first row whose guard accepts the frame decides:

- a state: the machine moves there;
- ``IGNORE``: the spec says to ignore the frame (the machine stays put);
- ``Illegal(message, spec)``: the IDL says this breaks a rule.

When no row matches, the ``ANY`` rows of the state (``send: "*"`` / ``receive: "*"``
in the IDL) decide; when there are none either, the event is illegal.  Sending
illegally raises ``IllegalSend`` (ours is the fault), receiving illegally raises
``UnexpectedFrame`` (the peer's).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Generic, TypeVar, Union

from runtime.errors import IllegalSend, UnexpectedFrame

__all__ = ["ANY", "IGNORE", "Ignore", "Illegal", "StateMachine", "Table"]

S = TypeVar("S", bound=enum.Enum)


class _Any:
    """The key of a state's ``*`` rows: any frame no specific row matched."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ANY"


ANY: Final = _Any()


class Ignore:
    """The outcome of a row the spec says to ignore (the frame is dropped)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "IGNORE"


IGNORE: Final = Ignore()


@dataclass(frozen=True, slots=True)
class Illegal:
    """The outcome of a row the IDL marks as an error, with its reason and citation."""

    message: str
    spec: str = ""


Guard = Callable[[Any], bool]
Outcome = Union[S, Ignore, Illegal]
Rows = tuple[tuple[Union[Guard, None], Outcome[S]], ...]
Table = Mapping[tuple[S, object], Rows[S]]


class StateMachine(Generic[S]):
    """One instance of a machine (a connection, a stream, ...) as seen by one role."""

    NAME: ClassVar[str]
    ROLES: ClassVar[tuple[str, ...]]
    INITIAL: ClassVar[Mapping[str, Any]]
    TERMINAL: ClassVar[frozenset[Any]]
    SEND: ClassVar[Mapping[str, Table[Any]]]
    RECEIVE: ClassVar[Mapping[str, Table[Any]]]

    __slots__ = ("role", "state", "_send", "_receive")

    def __init__(self, role: str, state: S | None = None) -> None:
        if role not in self.ROLES:
            raise ValueError(f"{self.NAME}: unknown role {role!r} (roles: {self.ROLES})")
        self.role = role
        self.state: S = self.INITIAL[role] if state is None else state
        self._send: Table[S] = self.SEND[role]
        self._receive: Table[S] = self.RECEIVE[role]

    @property
    def terminated(self) -> bool:
        return self.state in self.TERMINAL

    def send(self, frame: object) -> S:
        """Check that we may send ``frame`` now and move on; returns the new state.

        Raises ``IllegalSend`` when the table forbids it.  A row that says ignore
        leaves the state as it is (sending is harmless, the peer will drop it).
        """
        outcome = self._lookup(self._send, frame)
        if isinstance(outcome, Illegal) or outcome is None:
            raise self._error(IllegalSend, "send", frame, outcome)
        if not isinstance(outcome, Ignore):
            self.state = outcome
        return self.state

    def receive(self, frame: object) -> S | Ignore:
        """Apply a received frame: the new state, or ``IGNORE`` when the spec says so.

        Raises ``UnexpectedFrame`` when the peer broke the machine's rules.
        """
        outcome = self._lookup(self._receive, frame)
        if isinstance(outcome, Illegal) or outcome is None:
            raise self._error(UnexpectedFrame, "receive", frame, outcome)
        if isinstance(outcome, Ignore):
            return outcome
        self.state = outcome
        return outcome

    def allows_send(self, frame: object) -> bool:
        """Whether ``send(frame)`` would succeed, without changing anything."""
        outcome = self._lookup(self._send, frame)
        return outcome is not None and not isinstance(outcome, Illegal)

    def _lookup(self, table: Table[S], frame: object) -> Outcome[S] | None:
        state = self.state
        rows = table.get((state, type(frame)))
        if rows is not None:
            for guard, outcome in rows:
                if guard is None or guard(frame):
                    return outcome
        rows = table.get((state, ANY))
        if rows is not None:
            return rows[0][1]
        return None

    def _error(self, kind: type[IllegalSend] | type[UnexpectedFrame], verb: str, frame: object,
               outcome: Illegal | None) -> IllegalSend | UnexpectedFrame:  # fmt: skip
        name = type(frame).__name__
        where = f"role={self.role} and state={self.state.value} (machine {self.NAME})"
        if outcome is None:
            message = f"can't {verb} {name} when {where}"
            spec = ""
        else:
            message = f"{outcome.message} ({verb} {name} when {where})"
            spec = outcome.spec
        return kind(message, machine=self.NAME, role=self.role, state=str(self.state.value),
                    frame=name, spec=spec)  # fmt: skip

    def __repr__(self) -> str:
        return f"<{type(self).__name__} role={self.role} state={self.state.value}>"
