"""The 95 % confidence interval every summary of the project reports (evaluation and reproduction).

The interval is Student's t interval of the mean over episodes or seeds,
``mean +- t(0.975, n - 1) * sd / sqrt(n)`` (``sd`` with ``ddof=1``); :func:`ci95_half_width` is
its half-width.

>>> round(ci95_half_width([1.0, 2.0, 3.0]), 3)
2.484
>>> ci95_half_width([0.25, 0.25]), ci95_half_width([5.0])
(0.0, None)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import stdtrit  # Student's t quantile, what scipy.stats.t.ppf calls (without its import)


def ci95_half_width(values: Sequence[float] | np.ndarray) -> float | None:
    """Half-width of the 95 % Student-t interval of the mean of ``values``.

    ``None`` for fewer than two values (no spread to estimate), 0 when they are all equal.
    """
    array = np.asarray(values, dtype=float)
    if array.size < 2:
        return None
    # t * sd / sqrt(n), in this order: the numbers earlier results files hold, to the last bit
    return float(stdtrit(array.size - 1, 0.975) * array.std(ddof=1) / math.sqrt(array.size))
