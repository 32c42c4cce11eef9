"""Plain record classes that behave like dataclasses, without importing `dataclasses`.

`dataclasses` imports `inspect` (and with it `ast`, `dis`, `tokenize`), and
each `@dataclass` compiles its methods with `exec` when the class is
created: about 30 ms of start-up for the forty records a `stackmark
symbolize` run touches before its first answer, which is as long as the
whole run of llvm-symbolizer. The records on that path subclass `Record`
or `FrozenRecord` instead: each lists its fields once, in dataclass order
(`__slots__ = _fields = __match_args__ = (...)`: the literal tuple keeps
mypy's checking of class patterns), and writes its own `__init__`; these
bases give them the dataclass `repr`, equality (same class, equal fields),
and for frozen records hashing, immutability
(`dataclasses.FrozenInstanceError`) and pickling.
"""

from __future__ import annotations

from typing import Any, ClassVar


class Record:
    """Like `@dataclass(slots=True)`: repr and equality over `_fields`; unhashable."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self._fields])

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    # (Defining __eq__ makes the class unhashable, as a dataclass that is not frozen.)


class FrozenRecord(Record):
    """Like `@dataclass(frozen=True, slots=True)`: also hashable, immutable, picklable.

    `__init__` sets fields with `object.__setattr__`, as dataclasses do."""

    __slots__ = ()

    def __hash__(self) -> int:
        return hash(self._values())

    def __setattr__(self, name: str, value: object) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self._values())
