"""Caching prediction tables and model fits: in memory and as ``.npz`` files in a cache directory.

Predictions over a replayed trace depend only on (the trace, the predictor and its settings,
the seed), so each is computed once. The key is a SHA-256 of the series bytes (float64, C
order, with its shape), the predictor's name and :meth:`~agents.predictor.base.Predictor.params`,
the seed and a format version. The node mapping is part of the series (one column per node,
already mapped), so it is covered too. Online predictions (:mod:`agents.predictor.online`)
cannot use a whole trace's table (it is computed from the future); they cache what is
expensive in them instead, the LSTM's fits, each keyed by the history it was fitted on
(:meth:`PredictionCache.arrays`).

The default directory is ``$ACO_ENV_CACHE/predictions`` when ``ACO_ENV_CACHE`` is set, else
``~/.cache/aco-env/predictions``. One file per entry, written atomically (a temporary file with a
unique name renamed into place: :mod:`digital_twin.atomic_files`), so processes sharing the folder
never lose each other's entries or read a half-written file. Each array in a file carries the
zip format's CRC-32: a torn or damaged file fails it when read, and is recomputed and rewritten
with a warning.

Example:
    >>> import numpy as np
    >>> from agents.predictor import EmaPredictor
    >>> cache = PredictionCache(directory=None)  # memory only
    >>> series = np.full((20, 3), 30.0)
    >>> first = cache.get(EmaPredictor(), series, seed=0)
    >>> cache.get(EmaPredictor(), series, seed=0) is first, cache.stats.misses
    (True, 1)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import warnings
import zipfile
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from agents.predictor.base import Predictions, Predictor
from digital_twin.atomic_files import atomic_open

logger = logging.getLogger(__name__)

CACHE_ENV = "ACO_ENV_CACHE"
"""Environment variable naming the aco-env cache root (predictions go in ``predictions/``)."""
FORMAT_VERSION = 1
"""Bump when the meaning of cached predictions changes (e.g. a fix in a predictor)."""
_T = TypeVar("_T")


def default_directory() -> Path:
    """``$ACO_ENV_CACHE/predictions``, or ``~/.cache/aco-env/predictions``."""
    root = os.environ.get(CACHE_ENV)
    return (Path(root) if root else Path.home() / ".cache" / "aco-env") / "predictions"


def cache_key(predictor: Predictor, series: np.ndarray, seed: int, **extra: int | str) -> str:
    """The hex SHA-256 key of (format version, predictor name and params, seed, series, ``extra``).

    ``extra`` names what else the cached value depends on (e.g. ``kind="fit", tick=20``);
    without it, the key of the predictor's table over ``series``.
    """
    data = np.ascontiguousarray(series, dtype=np.float64)
    header = json.dumps(
        {
            "v": FORMAT_VERSION,
            "predictor": predictor.name,
            "params": predictor.params(),
            "seed": int(seed),
            "shape": list(data.shape),
            **extra,
        },
        sort_keys=True,
    )
    digest = hashlib.sha256(header.encode())
    digest.update(data.tobytes())
    return digest.hexdigest()


@dataclass
class CacheStats:
    """Lookup counts of a :class:`PredictionCache`."""

    memory_hits: int = 0
    disk_hits: int = 0
    misses: int = 0


class PredictionCache:
    """Cached values by key, in memory (least recently used first out) and on disk.

    A value is stored on disk as named arrays and kept in memory as what is built from them
    (a :class:`~agents.predictor.base.Predictions` table, a fitted model).

    Args:
        directory: Where ``<key>.npz`` files live; ``None`` = memory only. Created on first write.
        max_entries: Values kept in memory.
    """

    def __init__(self, directory: str | os.PathLike[str] | None, max_entries: int = 128) -> None:
        self.directory = None if directory is None else Path(directory)
        self.max_entries = max_entries
        self.stats = CacheStats()
        self._memory: OrderedDict[str, Any] = OrderedDict()

    def get(self, predictor: Predictor, series: np.ndarray, seed: int = 0) -> Predictions:
        """The predictions of ``predictor`` over ``series`` ``(T, N)`` with ``seed``, cached."""
        return self.arrays(
            cache_key(predictor, series, seed),
            lambda: _table_arrays(predictor.predict_trace(series, seed)),
            lambda arrays: Predictions(*(arrays[name] for name in _TABLE_FIELDS)),
        )

    def arrays(
        self,
        key: str,
        compute: Callable[[], dict[str, np.ndarray]],
        build: Callable[[dict[str, np.ndarray]], _T],
    ) -> _T:
        """The value of ``key``: from memory, else built from its file, else computed (and stored).

        Args:
            key: The value's key (:func:`cache_key`).
            compute: Computes the value's arrays, on a miss.
            build: Builds the value from its arrays (read-only, with the dtypes they were stored in).
        """
        value: _T
        if key in self._memory:
            self._memory.move_to_end(key)
            self.stats.memory_hits += 1
            value = self._memory[key]  # stored below for this key, so built by a ``build`` like this one
            return value
        loaded = self._load(key)
        if loaded is not None:
            try:
                value = build(loaded)
            except (KeyError, ValueError, TypeError):  # a file of another layout: recompute it
                loaded = None
            else:
                self.stats.disk_hits += 1
        if loaded is None:
            self.stats.misses += 1
            arrays = compute()
            self._store(key, arrays)
            for array in arrays.values():
                array.setflags(write=False)
            value = build(arrays)
        self._memory[key] = value
        while len(self._memory) > self.max_entries:
            self._memory.popitem(last=False)
        return value

    def path_of(self, key: str) -> Path | None:
        """The file of ``key`` (``None`` for a memory-only cache)."""
        return None if self.directory is None else self.directory / f"{key}.npz"

    def _load(self, key: str) -> dict[str, np.ndarray] | None:
        path = self.path_of(key)
        if path is None or not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {name: np.array(data[name]) for name in data.files}
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:  # a CRC-32 mismatch too
            logger.warning("prediction cache file %s is damaged (%s); computing it again", path, exc)
            return None
        for array in arrays.values():
            array.setflags(write=False)
        return arrays

    def _store(self, key: str, arrays: dict[str, np.ndarray]) -> None:
        path = self.path_of(key)
        if path is None:
            return
        try:
            with atomic_open(path, "wb") as handle:
                np.savez(handle, allow_pickle=False, **arrays)
        except OSError as exc:  # a read-only or full disk must not stop a run
            warnings.warn(f"prediction cache: {exc}", RuntimeWarning, stacklevel=3)


_TABLE_FIELDS = tuple(field.name for field in fields(Predictions))


def _table_arrays(table: Predictions) -> dict[str, np.ndarray]:
    """A table's arrays by field name, as its file stores them."""
    return {name: getattr(table, name) for name in _TABLE_FIELDS}


_DEFAULT: dict[Path, PredictionCache] = {}


def default_cache() -> PredictionCache:
    """The process-wide cache of :func:`default_directory` (resolved on every call)."""
    directory = default_directory()
    if directory not in _DEFAULT:
        _DEFAULT[directory] = PredictionCache(directory)
    return _DEFAULT[directory]
