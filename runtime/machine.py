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
from collections.abc import Callable, ItemsView, Iterator, Mapping, ValuesView
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Generic, Self, TypeVar, Union

from wirestream.runtime.errors import IllegalSend, UnexpectedFrame

__all__ = [
    "ANY",
    "IGNORE",
    "Dispatch",
    "Handlers",
    "Ignore",
    "Illegal",
    "MachineRegistry",
    "StateMachine",
    "Table",
    "check_all",
    "send_all",
]

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


_NOT_STATES: Final = frozenset({Ignore, Illegal})
"""The outcomes that are not a state (``send`` and ``receive`` test a row's outcome's
type against them: one set lookup instead of two ``isinstance`` calls)."""

Guard = Callable[[Any], bool]
Outcome = Union[S, Ignore, Illegal]
Rows = tuple[tuple[Union[Guard, None], Outcome[S]], ...]
Table = Mapping[tuple[S, object], Rows[S]]


class StateMachine(Generic[S]):
    """One instance of a machine (a connection, a stream, ...) as seen by one role."""

    NAME: ClassVar[str]
    SCOPE: ClassVar[str]
    """What one instance tracks (IDL ``scope:``): connection, stream, subscription ..."""
    ROLES: ClassVar[tuple[str, ...]]
    INITIAL: ClassVar[Mapping[str, Any]]
    TERMINAL: ClassVar[frozenset[Any]]
    SEND: ClassVar[Mapping[str, Table[Any]]]
    RECEIVE: ClassVar[Mapping[str, Table[Any]]]
    HANDLERS: ClassVar[Mapping[str, Mapping[type, str]]]
    """Per role: frame class -> the name of the engine method a received frame goes to
    (data, for docs and tests); the generated ``bind_<role>`` binds them, typed."""

    __slots__ = ("role", "state", "_send", "_receive")

    def __init__(self, role: str, state: S | None = None) -> None:
        if role not in self.ROLES:
            raise ValueError(f"{self.NAME}: unknown role {role!r} (roles: {self.ROLES})")
        self.role = role
        self.state: S = self.INITIAL[role] if state is None else state
        self._send: Table[S] = self.SEND[role]
        self._receive: Table[S] = self.RECEIVE[role]

    @classmethod
    def fresh(cls, role: str) -> Self:
        """A new instance in ``role``'s initial state: ``cls(role)`` in one call, for the
        engines that make one per stream (a generated ``__init__`` only names the roles
        for mypy and calls this class's)."""
        if role not in cls.ROLES:
            raise ValueError(f"{cls.NAME}: unknown role {role!r} (roles: {cls.ROLES})")
        machine = object.__new__(cls)
        machine.role = role
        machine.state = cls.INITIAL[role]
        machine._send = cls.SEND[role]
        machine._receive = cls.RECEIVE[role]
        return machine

    @property
    def terminated(self) -> bool:
        return self.state in self.TERMINAL

    @property
    def vacant(self) -> bool:
        """Whether this instance holds nothing worth keeping: a terminal state, or, for
        machines without one (an id that is reused), back in its initial state."""
        if self.TERMINAL:
            return self.state in self.TERMINAL
        return self.state is self.INITIAL[self.role]

    def send(self, frame: object) -> S:
        """Check that we may send ``frame`` now and move on; returns the new state.

        Raises ``IllegalSend`` when the table forbids it.  A row that says ignore
        leaves the state as it is (sending is harmless, the peer will drop it).
        """
        # ``_lookup`` inlined (here and in ``receive``): once per frame sent or received
        table = self._send
        outcome: Outcome[S] | None = None
        rows = table.get((self.state, type(frame)))
        if rows is not None:
            for guard, result in rows:
                if guard is None or guard(frame):
                    if type(result) not in _NOT_STATES:  # a state: the common row, at once
                        self.state = result  # type: ignore[assignment]
                        return self.state
                    outcome = result
                    break
        if outcome is None:
            rows = table.get((self.state, ANY))
            if rows is not None:
                outcome = rows[0][1]
        if outcome is None or isinstance(outcome, Illegal):
            raise self._error(IllegalSend, "send", frame, outcome)
        if not isinstance(outcome, Ignore):
            self.state = outcome
        return self.state

    def receive(self, frame: object) -> S | Ignore:
        """Apply a received frame: the new state, or ``IGNORE`` when the spec says so.

        Raises ``UnexpectedFrame`` when the peer broke the machine's rules.
        """
        table = self._receive
        outcome: Outcome[S] | None = None
        rows = table.get((self.state, type(frame)))
        if rows is not None:
            for guard, result in rows:
                if guard is None or guard(frame):
                    if type(result) not in _NOT_STATES:  # a state (as in ``send``)
                        self.state = result  # type: ignore[assignment]
                        return self.state
                    outcome = result
                    break
        if outcome is None:
            rows = table.get((self.state, ANY))
            if rows is not None:
                outcome = rows[0][1]
        if outcome is None or isinstance(outcome, Illegal):
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


def check_all(frame: object, *machines: StateMachine[Any]) -> None:
    """Raise ``IllegalSend`` unless every machine allows sending ``frame`` (nothing moves)."""
    for machine in machines:
        if not machine.allows_send(frame):
            machine.send(frame)  # raises the machine's own IllegalSend, with its row


def send_all(frame: object, *machines: StateMachine[Any]) -> None:
    """Send ``frame`` through every machine, all or none: checked first, then applied."""
    check_all(frame, *machines)
    for machine in machines:
        machine.send(frame)


Handlers = Mapping[type, Callable[..., object]]
"""Frame class -> the engine's bound handler: what a generated ``bind_<role>`` returns."""


class Dispatch:
    """A machine's received frames -> the engine's handlers, bound once per engine by the
    machine's generated, typed ``bind_<role>(engine)`` (h11's transition tables, one step
    further: the tables also say where the frame goes once the machine let it through).

    ``bind_<role>`` takes the engine as the generated ``*Handlers`` protocol of the
    machine's scope and role, so ``mypy --strict`` refuses an engine with a handler
    missing or taking another frame, and an IDE follows a frame to its handler.  At run
    time a missing handler fails at construction too (``AttributeError`` from the binder,
    ``TypeError`` here for one that is not callable), not silently when the frame first
    arrives.  ``receive`` applies the frame to the machine first: a row that says ignore
    returns False without calling anything, an error row (or no row) raises
    ``UnexpectedFrame``; a frame the table lists goes to its handler with ``context``.

    """

    __slots__ = ("_handlers", "machine")

    def __init__(self, machine: type[StateMachine[Any]], role: str,
                 handlers: Handlers) -> None:  # fmt: skip
        self.machine = machine
        if not all(map(callable, handlers.values())):  # (one pass in C: once per engine)
            names = machine.HANDLERS[role]
            for frame, handler in handlers.items():
                if not callable(handler):
                    name = names.get(frame, f"on_<{machine.SCOPE}>_<{frame.__name__}>")
                    raise TypeError(
                        f"no method {name}() for {frame.__name__}, which the {role} of "
                        f"machine {machine.NAME!r} receives (IDL scope {machine.SCOPE!r}); "
                        "add it, or list the frame under the machine's 'observes:' when "
                        "another machine handles it"
                    )
        self._handlers: dict[type, Callable[..., object]] = dict(handlers)

    def release(self) -> None:
        """Forget the handlers (bound methods of the engine that holds this dispatch: a
        reference cycle) once the engine is done receiving; ``receive`` then still
        applies frames to the machine and calls nothing."""
        self._handlers = {}

    def handles(self, frame: type) -> bool:
        """Whether a handler takes ``frame`` (a frame class) once the machine lets it in."""
        return frame in self._handlers

    def receive(self, machine: StateMachine[Any], frame: object, *context: object) -> bool:
        """Apply ``frame`` to ``machine``, then call its handler with ``context``.

        Returns False when a row says to ignore the frame (no handler runs), True when
        the machine took it.  Raises ``UnexpectedFrame`` when the machine refuses it.
        """
        if machine.receive(frame) is IGNORE:
            return False
        handler = self._handlers.get(type(frame))
        if handler is not None:
            handler(frame, *context)
        return True


K = TypeVar("K")
E = TypeVar("E")


class MachineRegistry(Generic[K, E]):
    """The live instances of one machine scope (streams, subscriptions, publishers ...),
    keyed by their id: the one "create on first send or receive, look up, forget when
    vacant" mechanism every engine uses.

    An entry is the machine itself or an engine object holding it (``machine_of`` finds
    it).  ``vacant`` entries (terminal, or back to the initial state for machines whose
    ids are reused) are forgotten by ``settle``.  ``stand_in`` answers for an id with no
    entry: a fresh machine in its initial state, or the state ``vacant_state`` picks
    (e.g. CLOSED for an id below the highest one seen), so the tables decide what an
    unknown id may do.
    """

    __slots__ = ("_entries", "_machine", "_role", "_machine_of", "_vacant_state")

    def __init__(
        self,
        machine: type[StateMachine[Any]],
        role: str,
        *,
        machine_of: Callable[[E], StateMachine[Any]] | None = None,
        vacant_state: Callable[[K], Any] | None = None,
    ) -> None:
        self._entries: dict[K, E] = {}
        self._machine = machine
        self._role = role
        self._machine_of = machine_of
        self._vacant_state = vacant_state

    # --- the mapping --------------------------------------------------------------

    def get(self, key: K) -> E | None:
        return self._entries.get(key)

    def __getitem__(self, key: K) -> E:
        return self._entries[key]

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[K]:
        return iter(self._entries)

    def items(self) -> ItemsView[K, E]:
        return self._entries.items()

    def values(self) -> ValuesView[E]:
        return self._entries.values()

    @property
    def entries(self) -> dict[K, E]:
        """The live entries (a view to share, e.g. with a resumable session)."""
        return self._entries

    # --- machines -------------------------------------------------------------------

    def new_machine(self, key: K | None = None) -> StateMachine[Any]:
        """A fresh machine for ``key``: the initial state, or ``vacant_state(key)``."""
        state = None if key is None or self._vacant_state is None else self._vacant_state(key)
        return self._machine(self._role, state)

    def machine(self, key: K) -> StateMachine[Any]:
        """The live machine of ``key``, else a detached stand-in (``new_machine``)."""
        entry = self._entries.get(key)
        return self.new_machine(key) if entry is None else self.machine_of(entry)

    def machine_of(self, entry: E) -> StateMachine[Any]:
        if self._machine_of is not None:
            return self._machine_of(entry)
        # The entries are the machines themselves (no typing.cast: a call on hot paths).
        return entry  # type: ignore[return-value]

    def add(self, key: K, entry: E) -> E:
        self._entries[key] = entry
        return entry

    def settle(self, key: K, entry: E | None = None) -> bool:
        """Keep ``entry`` (default: the current one) under ``key`` while its machine holds
        something, forget it once vacant; returns whether it is kept."""
        if entry is None:
            entry = self._entries.get(key)
            if entry is None:
                return False
        if self.machine_of(entry).vacant:
            self._entries.pop(key, None)
            return False
        self._entries[key] = entry
        return True

    def forget(self, key: K) -> E | None:
        return self._entries.pop(key, None)

    def clear(self) -> list[tuple[K, E]]:
        """Forget every entry; returns them (to report their end)."""
        entries = list(self._entries.items())
        self._entries.clear()
        return entries
