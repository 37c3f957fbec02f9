"""Plug-ins registered by name (sandbox providers, toolchains, mutators, ...).

    MUTATORS = Registry[Mutator]("mutator")

    @MUTATORS.register("comparison_flip")
    class ComparisonFlip(Mutator): ...

A lookup of an unknown name raises :class:`UnknownPluginError` listing the valid names.
The name is stored in every record a plug-in produces, so rows are self-describing.
"""

from __future__ import annotations

from typing import Callable, Generic, Iterator, TypeVar

from repogym.errors import UnknownPluginError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._items[name] = obj
            setattr(obj, "name", name)
            return obj

        return deco

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise UnknownPluginError(self.kind, name, list(self._items)) from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
