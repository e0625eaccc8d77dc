"""Elementwise math that gives the same bits on every machine, for values drawn into episodes.

numpy picks a kernel for ``np.exp`` or ``np.sin`` by the CPU's SIMD width (AVX2, AVX-512...), and the kernels'
last bits differ (on an AVX-512 machine, ``np.exp`` of normal draws differs from the C library's
``exp`` in about 5 % of values). An episode is a function of its seed on any machine, so whatever a
draw becomes on its way into an episode goes through the C library's scalar function instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def _exp_or_inf(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:  # np.exp's inf, without its warning
        return math.inf


def _elementwise(function: Callable[[float], float], values: np.ndarray | float) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    return np.array(list(map(function, array.ravel().tolist())), dtype=np.float64).reshape(array.shape)


def exp(values: np.ndarray | float) -> np.ndarray:
    """``exp`` of each of ``values`` (any shape), float64, by :func:`math.exp`; overflow gives ``inf``.

    >>> exp(np.array([0.0, 1.0, 1000.0])).tolist()
    [1.0, 2.718281828459045, inf]
    """
    try:  # math.exp itself, without a wrapper per value, unless a value overflows (a draw at every reset)
        return _elementwise(math.exp, values)
    except OverflowError:
        return _elementwise(_exp_or_inf, values)


def sin(values: np.ndarray | float) -> np.ndarray:
    """``sin`` of each of ``values`` (any shape, radians), float64, by :func:`math.sin`.

    >>> sin(np.array([0.0, math.pi / 2])).tolist()
    [0.0, 1.0]
    """
    return _elementwise(math.sin, values)
