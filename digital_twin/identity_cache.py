"""A cache keyed by object identity, for what an env rebuilds from the same objects at every reset.

A scenario hands the same fleet tuple and workload config to every episode; hashing them (every
field of every node or class) costs more than the lookup it serves, so these caches look them up
by ``id`` instead, keeping each key alive so that its id is never reused by another object.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class IdentityCache(Generic[K, V]):
    """``build(key)``, remembered per key object (at most ``size`` keys; the cache empties when full).

    Only for immutable keys and values that no caller changes: every caller gets the same value.
    """

    def __init__(self, build: Callable[[K], V], size: int = 16) -> None:
        self._build = build
        self._size = size
        self._entries: dict[int, tuple[K, V]] = {}

    def __call__(self, key: K) -> V:
        """The value for ``key``: built on the first call with this object, remembered after."""
        entry = self._entries.get(id(key))
        if entry is None or entry[0] is not key:
            if len(self._entries) >= self._size:
                self._entries.clear()
            entry = self._entries[id(key)] = key, self._build(key)
        return entry[1]
