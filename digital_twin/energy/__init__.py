"""Energy and carbon accounting data: node power curves, GPU board power, grid carbon intensity.

Power (watts):

* :class:`PowerCurve` (:mod:`~digital_twin.energy.power_curves`): a node's wall power as a
  piecewise-linear function of cpu utilisation; :data:`SPECPOWER_CURVES` holds the 7
  SPECpower_ssj2008 servers CloudSim uses (:func:`specpower_curve` looks one up);
  :func:`read_specpower_csv` reads curves in CloudSim's 11-point form.
* :class:`GpuPower` (:mod:`~digital_twin.energy.gpu_power`): idle and busy watts per GPU;
  :data:`GPU_TDP_W` maps the fleets' GPU model names to board power (:data:`GPU_TDP_SOURCES`
  says where each comes from); :func:`gpu_power` builds one (busy = TDP, idle =
  :data:`GPU_IDLE_FRACTION` x TDP, both assumptions stated there), and
  :func:`uses_default_gpu_power` says when a model fell back to :data:`DEFAULT_GPU_TDP_W`;
  :func:`read_gpu_board_power_csv` reads a board-power table.

Carbon (gCO2eq/kWh):

* :class:`CarbonIntensity` (:mod:`~digital_twin.energy.carbon_intensity`): a step function of
  time that wraps around its period, with exact integrals and :meth:`~CarbonIntensity.grams`;
  :func:`read_carbon_csv` reads a generic ``time_s|timestamp,g_per_kwh`` file.
* :func:`read_eia_carbon_csv` (:mod:`~digital_twin.energy.eia930`): the hourly EIA-930 files as
  packaged by SustainDC, with their documented anomalies cleaned and logged.

Bad files raise :class:`~digital_twin.errors.TraceError` naming the file, line and column; bad
values given in code raise :class:`~digital_twin.errors.SpecError`.

Example:
    >>> from digital_twin.energy import CarbonIntensity, specpower_curve
    >>> watts = specpower_curve("hp-ml110-g4").watts_at(0.5)
    >>> CarbonIntensity.constant(400.0).grams(0.0, 3600.0, watts)  # one hour at 50 % load
    40.8
"""

from digital_twin.energy.carbon_intensity import J_PER_KWH, CarbonIntensity, read_carbon_csv
from digital_twin.energy.eia930 import EIA_EMISSION_FACTORS, EIA_SOURCES, read_eia_carbon_csv
from digital_twin.energy.gpu_power import (
    DEFAULT_GPU_TDP_W,
    GPU_IDLE_FRACTION,
    GPU_TDP_SOURCES,
    GPU_TDP_W,
    GpuBoardRow,
    GpuPower,
    gpu_power,
    gpu_tdp_w,
    read_gpu_board_power_csv,
    uses_default_gpu_power,
)
from digital_twin.energy.power_curves import (
    CLOUDSIM_CLASSES,
    SPECPOWER_CURVES,
    PowerCurve,
    read_specpower_csv,
    specpower_curve,
)

__all__ = [
    "CLOUDSIM_CLASSES",
    "DEFAULT_GPU_TDP_W",
    "EIA_EMISSION_FACTORS",
    "EIA_SOURCES",
    "GPU_IDLE_FRACTION",
    "GPU_TDP_SOURCES",
    "GPU_TDP_W",
    "J_PER_KWH",
    "SPECPOWER_CURVES",
    "CarbonIntensity",
    "GpuBoardRow",
    "GpuPower",
    "PowerCurve",
    "gpu_power",
    "gpu_tdp_w",
    "read_carbon_csv",
    "read_eia_carbon_csv",
    "read_gpu_board_power_csv",
    "read_specpower_csv",
    "specpower_curve",
    "uses_default_gpu_power",
]
