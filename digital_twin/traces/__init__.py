"""Telemetry readers: real utilisation traces -> :class:`TraceSeries` -> ``Telemetry``.

Readers (each returns a :class:`TraceSeries`, cpu %/mem % on a regular tick grid):

* :func:`read_alibaba_machine_usage`: Alibaba 2018 raw per-machine ``machine_usage`` rows.
* :func:`read_alibaba_dc_mean`: Alibaba 2018 data-centre mean per 300 s (the reference trace).
* :func:`read_borg_instance_usage`, :func:`read_borg_cell_mean`: Google Borg 2019.
* :func:`read_azure_vm_aggregate`: Azure 2019 VM sums, normalised to percent.
* :func:`read_planetlab`: PlanetLab/CoMon VM cpu % (CloudSim's copy), a folder with one file per VM.
* :func:`read_generic`: any CSV/Parquet given a column mapping and units.

Mappings onto a fleet (each returns a :class:`~digital_twin.telemetry.Telemetry`):
:func:`telemetry_from_aggregate` (per-node offset/scale/bias, e.g.
:data:`ALIBABA_REFERENCE_MAPPING`), :func:`telemetry_from_machines` (one machine per node) and
:func:`telemetry_from_groups` (the mean of a group of machines per node; :func:`sample_groups`
draws seeded groups).

Bad input raises :class:`~digital_twin.errors.TraceError` naming the file and the line or
column. Documented cleaning (Alibaba error codes, Borg sentinel times, long gaps filled on
request) and an episode mostly filled rather than observed are logged once per read, at
``WARNING`` level on loggers under ``digital_twin.traces``, each record carrying a
:class:`TraceCleaning` with counts as ``record.cleaning``. Resampling and gap rules:
:mod:`digital_twin.traces.resample`.

Example:
    >>> from digital_twin.traces import (  # doctest: +SKIP
    ...     ALIBABA_REFERENCE_MAPPING, read_alibaba_dc_mean, telemetry_from_aggregate)
    >>> series = read_alibaba_dc_mean(  # doctest: +SKIP
    ...     "machine_usage_days_1_to_8_grouped_300_seconds.csv")
    >>> telemetry = telemetry_from_aggregate(  # doctest: +SKIP
    ...     series, ALIBABA_REFERENCE_MAPPING, horizon_s=86_400)
    >>> telemetry.background_pct.shape  # doctest: +SKIP
    (288, 5, 2)
"""

from digital_twin.traces._io import TraceCleaning
from digital_twin.traces.alibaba2018 import read_alibaba_dc_mean, read_alibaba_machine_usage
from digital_twin.traces.azure2019 import read_azure_vm_aggregate
from digital_twin.traces.borg2019 import (
    REFERENCE_P75_TARGET_PCT,
    read_borg_cell_mean,
    read_borg_instance_usage,
    scale_to_p75,
)
from digital_twin.traces.generic import read_generic
from digital_twin.traces.mapping import (
    ALIBABA_REFERENCE_MAPPING,
    BORG_REFERENCE_MAPPING,
    REFERENCE_MEM_SCALE,
    OffsetScaleBias,
    sample_groups,
    telemetry_from_aggregate,
    telemetry_from_groups,
    telemetry_from_machines,
)
from digital_twin.traces.planetlab import read_planetlab
from digital_twin.traces.resample import DEFAULT_MAX_GAP_S
from digital_twin.traces.series import TraceSeries

__all__ = [
    "ALIBABA_REFERENCE_MAPPING",
    "BORG_REFERENCE_MAPPING",
    "DEFAULT_MAX_GAP_S",
    "REFERENCE_MEM_SCALE",
    "REFERENCE_P75_TARGET_PCT",
    "OffsetScaleBias",
    "TraceCleaning",
    "TraceSeries",
    "read_alibaba_dc_mean",
    "read_alibaba_machine_usage",
    "read_azure_vm_aggregate",
    "read_borg_cell_mean",
    "read_borg_instance_usage",
    "read_generic",
    "read_planetlab",
    "sample_groups",
    "scale_to_p75",
    "telemetry_from_aggregate",
    "telemetry_from_groups",
    "telemetry_from_machines",
]
