"""Cutting a node's planted room into runs: rectangles of units (cores or GPUs) x time that tile it exactly."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Piece:
    """One planted run on a node: ``units`` whole cores (or GPUs) from ``start_s`` to ``end_s``."""

    units: int
    start_s: float
    end_s: float


def tile(
    units: int,
    start_s: float,
    end_s: float,
    *,
    epoch_s: float,
    min_duration_s: float,
    max_duration_s: float,
    max_units: int,
    split_units_prob: float,
    rng: np.random.Generator,
) -> list[Piece]:
    """Pieces that cover ``units x [start_s, end_s)`` exactly, each at most ``max_units`` wide.

    Guillotine cuts, drawn from ``rng``: a piece wider than ``max_units`` is cut across its
    units; one longer than ``max_duration_s`` is cut in time, at a multiple of ``epoch_s`` that
    leaves both parts at least ``min_duration_s`` long; any other is kept with probability 1/2,
    else cut (across units with ``split_units_prob`` when both cuts are possible). A window
    shorter than ``min_duration_s`` yields no pieces (left idle), and so does a remainder no cut
    can reach.

    Returns:
        The pieces, in the order cut (the caller shuffles arrivals).
    """
    out: list[Piece] = []
    stack = [(units, start_s, end_s)]
    while stack:
        width, s, e = stack.pop()
        if width <= 0 or e - s < min_duration_s:
            continue
        cuts = _time_cuts(s, e, epoch_s, min_duration_s)
        if width > max_units:
            left = int(rng.integers(1, max_units + 1))
            stack.extend([(left, s, e), (width - left, s, e)])
        elif e - s > max_duration_s:
            if len(cuts):
                t = float(cuts[int(rng.integers(len(cuts)))])
                stack.extend([(width, s, t), (width, t, e)])
            else:  # no epoch cut fits: keep the longest run, idle the rest
                stack.append((width, s, s + max_duration_s))
        elif rng.random() < 0.5 or (width == 1 and not len(cuts)):
            out.append(Piece(width, s, e))
        elif width > 1 and (not len(cuts) or rng.random() < split_units_prob):
            left = int(rng.integers(1, width))
            stack.extend([(left, s, e), (width - left, s, e)])
        else:
            t = float(cuts[int(rng.integers(len(cuts)))])
            stack.extend([(width, s, t), (width, t, e)])
    return out


def _time_cuts(start_s: float, end_s: float, epoch_s: float, min_duration_s: float) -> np.ndarray:
    """Multiples of ``epoch_s`` in ``[start_s + min, end_s - min]``."""
    first = np.ceil((start_s + min_duration_s) / epoch_s)
    last = np.floor((end_s - min_duration_s) / epoch_s)
    if last < first:
        return np.zeros(0)
    return np.arange(first, last + 1) * epoch_s
