"""Reproducing the reference ACO system's benchmarks, in its own setting and in the full twin.

One module per tier, each with ``NAME``, ``TITLE``, a ``Config`` dataclass (sizes; defaults
are the full reproduction) and ``run(seeds, config=None, oracle_limits=None, backend=None) ->
dict``. ``backend`` (a started :class:`training.execution.backend.Backend`) runs the tier's twin
episodes, one unit per (agent, seed) (:mod:`training.reproduction.play`); ``None`` runs them here:

| tier | module | needs real traces |
|---|---|---|
| T1.1 cost against First-Fit | :mod:`training.reproduction.t1_1_cost` | no |
| T1.3 latency p99 | :mod:`training.reproduction.t1_3_latency` | no |
| T4.1 GPU scheduling | :mod:`training.reproduction.t4_1_gpu` | yes (``ACO_ENV_TRACES``) |
| T5.2 predictor routing | :mod:`training.reproduction.t5_2_predictor` | yes |

A tier whose data is missing returns ``{"tier", "title", "seeds", "skipped": reason}``.
:func:`run_tiers` runs several; ``aco-env reproduce`` writes the result as
``reproduction.json`` and renders it (:func:`training.reproduction.report.render_blocks`).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from agents.oracle.milp.limits import SolveLimits
from training.execution.backend import Backend

TIERS: dict[str, str] = {
    "T1.1": "training.reproduction.t1_1_cost",
    "T1.3": "training.reproduction.t1_3_latency",
    "T4.1": "training.reproduction.t4_1_gpu",
    "T5.2": "training.reproduction.t5_2_predictor",
}
"""Tier name -> module implementing it."""


def tier_module(name: str) -> ModuleType:
    """The module of tier ``name`` (e.g. ``"T1.1"``).

    Raises:
        KeyError: Unknown tier; the message lists the known ones.
    """
    if name not in TIERS:
        raise KeyError(f"unknown tier {name!r}; known: {', '.join(TIERS)}")
    return importlib.import_module(TIERS[name])


def run_tiers(
    names: Sequence[str], seeds: Sequence[int], oracle_limits: SolveLimits | None, backend: Backend | None = None
) -> dict[str, Any]:
    """``{tier: result}`` for each tier in ``names``, with its default (full) configuration."""
    return {name: tier_module(name).run(seeds, oracle_limits=oracle_limits, backend=backend) for name in names}


__all__ = ["TIERS", "run_tiers", "tier_module"]
