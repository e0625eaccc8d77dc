"""Actions: ``Discrete(N + 1)``; index i < N places the current job on node i, N defers it."""

from __future__ import annotations

import numpy as np

from digital_twin import DigitalTwin


def action_mask(twin: DigitalTwin) -> np.ndarray:
    """``(N + 1,)`` bool: nodes the current job fits on now, then defer (always True)."""
    fit = twin.fit_array()
    mask = np.ones(len(fit) + 1, dtype=bool)
    mask[:-1] = fit
    return mask


def as_action_index(action: object, n_actions: int) -> int | None:
    """The action as a Python int in ``[0, n_actions)``, or ``None`` when it is not one.

    Accepts Python and NumPy integers and 0-d / 1-element integer arrays (as SB3 passes them).
    """
    if type(action) is int:  # the common case, first (bool is not int here)
        return action if 0 <= action < n_actions else None
    if isinstance(action, np.ndarray):
        if action.size != 1 or not np.issubdtype(action.dtype, np.integer):
            return None
        action = action.reshape(()).item()
    if isinstance(action, bool) or not isinstance(action, int | np.integer):
        return None
    index = int(action)
    return index if 0 <= index < n_actions else None
