"""Reading data source options: Spark hands them over as strings, case-insensitively.

Every getter names the source and the option in its error, says what was given and what
is accepted, so a typo fails at ``load()`` with a sentence, not deep inside a task.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from wirestream.runtime.spark.errors import SparkOptionError

__all__ = ["Options"]

_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


class Options:
    """The options given to one data source, with typed, checked getters.

    ``known`` lists every option the source understands; anything else is refused, since
    a misspelt ``maxRecordsPerTrigger`` silently ignored is a query that never paces.
    Spark's own keys (``path``, ``paths``) are always allowed.
    """

    def __init__(self, source: str, given: Mapping[str, str], known: Iterable[str]) -> None:
        self.source = source
        self._values = {key.lower(): value for key, value in given.items()}
        self._known = {key.lower(): key for key in known}
        unknown = sorted(
            key for key in self._values if key not in self._known and key not in ("path", "paths")
        )
        if unknown:
            raise SparkOptionError(
                f"{source}: unknown option {unknown[0]!r}; "
                f"accepted: {', '.join(sorted(self._known.values()))}"
            )

    def has(self, name: str) -> bool:
        return name.lower() in self._values

    def text(self, name: str, default: str | None = None) -> str:
        value = self._values.get(name.lower(), default)
        if value is None:
            raise SparkOptionError(f"{self.source}: option {name!r} is required")
        return value

    def optional(self, name: str) -> str | None:
        return self._values.get(name.lower())

    def choice(self, name: str, choices: Iterable[str], default: str) -> str:
        accepted = list(choices)
        value = self._values.get(name.lower(), default)
        for choice in accepted:
            if value.lower() == choice.lower():
                return choice
        raise SparkOptionError(
            f"{self.source}: option {name}={value!r} is not one of {', '.join(accepted)}"
        )

    def integer(
        self, name: str, default: int | None = None, *, minimum: int | None = None
    ) -> int | None:
        raw = self._values.get(name.lower())
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise SparkOptionError(
                f"{self.source}: option {name}={raw!r} is not an integer"
            ) from None
        if minimum is not None and value < minimum:
            raise SparkOptionError(f"{self.source}: option {name}={value} is below {minimum}")
        return value

    def count(self, name: str, default: int, *, minimum: int | None = None) -> int:
        value = self.integer(name, default, minimum=minimum)
        assert value is not None
        return value

    def flag(self, name: str, default: bool) -> bool:
        raw = self._values.get(name.lower())
        if raw is None:
            return default
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        raise SparkOptionError(f"{self.source}: option {name}={raw!r} is not true or false")
