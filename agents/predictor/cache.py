"""Caching prediction tables: in memory and as ``.npz`` files in a cache directory.

Predictions over a replayed trace depend only on (the trace, the predictor and its settings,
the seed), so each is computed once. The key is a SHA-256 of the series bytes (float64, C
order, with its shape), the predictor's name and :meth:`~agents.predictor.base.Predictor.params`,
the seed and a format version. The node mapping is part of the series (one column per node,
already mapped), so it is covered too.

The default directory is ``$ACO_ENV_CACHE/predictions`` when ``ACO_ENV_CACHE`` is set, else
``~/.cache/aco-env/predictions``. Files are written atomically (a temporary file renamed into
place), so concurrent processes never read a half-written file; an unreadable file is
recomputed and rewritten.

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
import os
import tempfile
import warnings
import zipfile
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agents.predictor.base import Predictions, Predictor

CACHE_ENV = "ACO_ENV_CACHE"
"""Environment variable naming the aco-env cache root (predictions go in ``predictions/``)."""
FORMAT_VERSION = 1
"""Bump when the meaning of cached predictions changes (e.g. a fix in a predictor)."""
_FIELDS = ("predicted_pct", "spike_probability", "confidence")


def default_directory() -> Path:
    """``$ACO_ENV_CACHE/predictions``, or ``~/.cache/aco-env/predictions``."""
    root = os.environ.get(CACHE_ENV)
    return (Path(root) if root else Path.home() / ".cache" / "aco-env") / "predictions"


def cache_key(predictor: Predictor, series: np.ndarray, seed: int) -> str:
    """The hex SHA-256 key of (format version, predictor name and params, seed, series)."""
    data = np.ascontiguousarray(series, dtype=np.float64)
    header = json.dumps(
        {
            "v": FORMAT_VERSION,
            "predictor": predictor.name,
            "params": predictor.params(),
            "seed": int(seed),
            "shape": list(data.shape),
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
    """Prediction tables by key, in memory (least recently used first out) and on disk.

    Args:
        directory: Where ``<key>.npz`` files live; ``None`` = memory only. Created on first write.
        max_entries: Tables kept in memory.
    """

    def __init__(self, directory: str | os.PathLike[str] | None, max_entries: int = 64) -> None:
        self.directory = None if directory is None else Path(directory)
        self.max_entries = max_entries
        self.stats = CacheStats()
        self._memory: OrderedDict[str, Predictions] = OrderedDict()

    def get(self, predictor: Predictor, series: np.ndarray, seed: int = 0) -> Predictions:
        """The predictions of ``predictor`` over ``series`` ``(T, N)`` with ``seed``, cached."""
        key = cache_key(predictor, series, seed)
        table = self._memory.get(key)
        if table is not None:
            self._memory.move_to_end(key)
            self.stats.memory_hits += 1
            return table
        table = self._load(key)
        if table is not None:
            self.stats.disk_hits += 1
        else:
            self.stats.misses += 1
            table = predictor.predict_trace(series, seed)
            self._store(key, table)
        self._memory[key] = table
        while len(self._memory) > self.max_entries:
            self._memory.popitem(last=False)
        return table

    def path_of(self, key: str) -> Path | None:
        """The file of ``key`` (``None`` for a memory-only cache)."""
        return None if self.directory is None else self.directory / f"{key}.npz"

    def _load(self, key: str) -> Predictions | None:
        path = self.path_of(key)
        if path is None or not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = [np.array(data[name], dtype=np.float64) for name in _FIELDS]
        except (OSError, ValueError, KeyError, zipfile.BadZipFile):
            return None  # unreadable: recompute (and overwrite)
        for array in arrays:
            array.setflags(write=False)
        return Predictions(*arrays)

    def _store(self, key: str, table: Predictions) -> None:
        path = self.path_of(key)
        if path is None:
            return
        tmp_name = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, tmp_name = tempfile.mkstemp(dir=path.parent, suffix=".npz.tmp")
            with os.fdopen(handle, "wb") as tmp:
                np.savez(tmp, **{name: getattr(table, name) for name in _FIELDS})
            os.replace(tmp_name, path)
        except OSError as exc:  # a read-only or full disk must not stop a run
            if tmp_name is not None:
                Path(tmp_name).unlink(missing_ok=True)
            warnings.warn(
                f"cannot write prediction cache file {path}: {exc}", RuntimeWarning, stacklevel=3
            )


_DEFAULT: dict[Path, PredictionCache] = {}


def default_cache() -> PredictionCache:
    """The process-wide cache of :func:`default_directory` (resolved on every call)."""
    directory = default_directory()
    if directory not in _DEFAULT:
        _DEFAULT[directory] = PredictionCache(directory)
    return _DEFAULT[directory]
