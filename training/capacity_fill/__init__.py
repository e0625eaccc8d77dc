"""FGD's capacity-fill evaluation of GPU-sharing placement policies (``aco-env capacity-fill``).

:mod:`.fill` runs one fill (pods sampled with replacement until arrived GPU demand reaches a
share of capacity; tasks never finish); :mod:`.report` summarises fills over seeds.
"""

from training.capacity_fill.fill import DEFAULT_MAX_LOAD, FillCurve, check_fillable, run_fill
from training.capacity_fill.report import DEFAULT_TABLE_LOADS, markdown_table, summarize, write_results

__all__ = [
    "DEFAULT_MAX_LOAD",
    "DEFAULT_TABLE_LOADS",
    "FillCurve",
    "check_fillable",
    "markdown_table",
    "run_fill",
    "summarize",
    "write_results",
]
