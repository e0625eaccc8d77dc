"""Valid inputs for the fuzz tests (tests/training/cli/test_fuzz_inputs.py).

Small files in every reader's format, and scenarios using them.

:func:`build_world` writes, under one folder:

* ``traces/``: the files the bundled scenarios read through ``${ACO_ENV_TRACES}`` (same relative
  paths, a few rows each), so every bundled scenario validates without the real traces;
* ``scenarios/``: the bundled scenario files as they are, their ``data/`` folder, and the small
  scenarios of :data:`SMALL_SCENARIOS` (one per telemetry reader and job source, 1 hour, with a
  ``limits:`` mapping low enough that any mutation of their other keys stays cheap to evaluate).

Each scenario that reads a file is also a :class:`DataSeed`: the key of its path and the file, so
the fuzzer can write a mutated copy elsewhere and point the key at it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

import scenarios
from digital_twin.workloads.alibaba_gpu2023 import POD_COLUMNS

TRACES = "traces"
SCENARIOS = "scenarios"
SMALL_LIMITS = {
    "max_nodes": 32,
    "max_jobs": 400,
    "max_horizon_s": 200_000,
    "max_ticks": 5_000,
    "max_telemetry_cells": 50_000,
}
"""The ``limits:`` of the small scenarios: an episode of any of their mutations takes well under a second."""


def _rows(header: str | None, rows: list[str]) -> str:
    return "\n".join(([header] if header else []) + rows) + "\n"


def _dc_mean(n: int) -> str:
    rows = [f"{30 + (k * 7) % 40:.3f},{50 + (k * 3) % 30:.3f},1.0,2.0,3.0" for k in range(n)]
    return _rows("cpu_util_percent,mem_util_percent,net_in,net_out,disk_io_percent", rows)


def _machine_usage(machines: list[str], seconds: int, step: int) -> str:
    rows = [
        f"{m},{t},{20 + (t // step + i * 5) % 60},{40 + i},,,1.5,2.5,4"
        for i, m in enumerate(machines)
        for t in range(0, seconds, step)
    ]
    return _rows(None, rows)


def _planetlab_vm(index: int, lines: int = 288) -> str:
    return "".join(f"{(k * (index + 3)) % 101}\n" for k in range(lines))


def _pods(n: int, t0: int, spread: int) -> str:
    qos = ("LS", "BE", "Burstable", "Guaranteed")
    phases = ("Running", "Succeeded", "Failed", "Pending")
    rows = []
    for k in range(n):
        created = t0 + k * spread // n
        gpus, spec = (1, "T4|A10") if k % 3 == 0 else (0, "")
        scheduled = "" if phases[k % 4] == "Pending" else str(created + 5)
        rows.append(
            f"pod-{k},{2000 + 500 * (k % 4)},{4096 * (1 + k % 3)},{gpus},{1000 if gpus else 0},{spec},"
            f"{qos[k % 4]},{phases[k % 4]},{created},{created + 600 + 60 * k},{scheduled}"
        )
    return _rows(",".join(POD_COLUMNS), rows)


def _node_list() -> str:
    models = ("P100", "T4", "A10", "V100M16", "G2", "")
    rows = [f"node-{k},{32000 + 16000 * (k % 2)},{131072},{0 if not m else 2},{m}" for k, m in enumerate(models * 2)]
    return _rows("sn,cpu_milli,memory_mib,gpu,model", rows)


def _spot_gpu_nodes() -> str:
    models = ("A10", "H800", "GPU-series-1", "A100-SXM4-80GB")
    rows = [f"{m},{1 if m == 'A10' else 8},{128 if k % 2 else 192},{3 * k}" for k, m in enumerate(models * 2)]
    return _rows("gpu_model,gpu_capacity_num,cpu_num,node_name", rows)


def _swf(n: int) -> str:
    header = ["; Version: 2.2", "; Computer: fuzz", "; MaxProcs: 128", "; Queue: 1 batch", ";"]
    rows = [
        f"{k + 1} {k * 120} 10 {300 + 60 * k} {1 + k % 8} -1 {-1 if k % 2 else 1048576} {1 + k % 8} 3600 -1 1 "
        f"{k % 5} 1 -1 {1 + k % 2} -1 -1 -1"
        for k in range(n)
    ]
    return _rows(None, header + rows)


def _vmtable(n: int) -> str:
    categories = ("Interactive", "Delay-insensitive", "Unkown")
    rows = [
        f"vm{k},sub{k % 3},dep{k % 4},{0 if k < 3 else 300 * k},{3600 + 900 * k},90.5,20.1,80.2,"
        f"{categories[k % 3]},{1 + k % 4},{0.75 * (1 + k % 4)}"
        for k in range(n)
    ]
    return "\r\n".join(rows) + "\r\n"


def _batch_tasks(n: int) -> str:
    statuses = ("Terminated", "Failed", "Running", "Terminated")
    rows = [
        f"{-100 if k == 0 else 60 * k},{60 * k + 900},{k // 3},{k % 3},{1 + k % 2},{statuses[k % 4]},"
        f"{50 * (1 + k % 4)},{0.01 * (1 + k % 5):.2f}"
        for k in range(n)
    ]
    return _rows(None, rows)


def _llm(n: int) -> str:
    rows = [f"2023-11-16 18:{k // 60:02d}:{k % 60:02d}.{k:07d},{100 + 37 * k},{10 + 11 * k}"
            for k in range(0, 3 * n, 3)]
    return _rows("TIMESTAMP,ContextTokens,GeneratedTokens", rows)


def _borg_instances(n: int) -> str:
    rows = [f'{k * 60_000_000},c{k % 4},"{{\'cpus\': {0.01 + (k % 7) / 100:.3f}, \'memory\': {0.02:.3f}}}"'
            for k in range(n)]
    return _rows("time,collection_id,average_usage", rows)


def _borg_cell(n: int) -> str:
    return _rows("cpu,memory", [f"{0.2 + (k % 5) / 20:.3f},{0.4 + (k % 3) / 30:.3f}" for k in range(n)])


def _azure_aggregate(n: int) -> str:
    rows = [f"{300 * k},{5.2e6 + 1e5 * (k % 7):.1f},{1.9e6 + 5e4 * (k % 3):.1f}" for k in range(n)]
    return _rows("timestamp,cpu_usage,assigned_mem", rows)


def _generic_csv(n: int) -> str:
    rows = [f"{60 * k},{m},{10 + (k * 3) % 80},{30 + k % 20}" for k in range(n) for m in ("m1", "m2")]
    return _rows("time,machine,cpu,mem", rows)


def generic_parquet_frame(n: int = 24) -> pd.DataFrame:
    """The generic reader's row-per-tick Parquet file: ``cpu`` and ``mem`` in percent."""
    return pd.DataFrame({"cpu": [20.0 + k % 50 for k in range(n)], "mem": [40.0 + k % 10 for k in range(n)]})


BUNDLED_TRACE_FILES: dict[str, str] = {
    "alibaba-cluster-trace-v2017/batch_task.csv": _batch_tasks(30),
    "alibaba-2018-machine-usage-sample/machine_usage_sample.csv": _machine_usage(
        [f"m_{k}" for k in range(1933, 1938)], 5 * 3600 + 600, 300
    ),
    "alibaba-2018-machine-usage-dcavg-300s/machine_usage_days_1_to_8_grouped_300_seconds.csv": _dc_mean(1900),
    "alibaba-gpu-2023/openb_node_list_gpu_node.csv": _node_list(),
    "alibaba-gpu-2023/openb_pod_list_gpuspec33.csv": _pods(40, 12787200, 20000),
    "alibaba-gpu-2023/openb_node_list_all_node.csv": _node_list(),
    "alibaba-gpu-2023/openb_pod_list_default.csv": _pods(40, 0, 20000),
    "alibaba-spot-gpu-2026/node_info_df.csv": _spot_gpu_nodes(),
    "swf-nasa-ipsc-1993/NASA-iPSC-1993-3.1-cln.swf": _swf(30),
    "azure-vmtable-2017-sample/vmtable.csv": _vmtable(12),
    "azure-llm-inference-2023-conv/AzureLLMInferenceTrace_conv.csv": _llm(40),
}
"""``${ACO_ENV_TRACES}``-relative path -> content, for the bundled scenarios."""
PLANETLAB_DAY = "planetlab-20110306/cpu"
"""The PlanetLab folder the bundled ``fleet5-planetlab`` reads (six VM files written)."""


def _small(name: str, fleet: dict[str, Any], telemetry: dict[str, Any], workload: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema_version": 2,
        "name": name,
        "description": f"fuzz seed {name}",
        "seed": 0,
        "horizon_s": 3600,
        "queue_ttl_s": 900,
        "weights": {"rejection_usd": 1.0, "wait_usd_per_job_hour": 0.1},
        "spot": {"recovery_s": 300, "interruptions": True},
        "limits": dict(SMALL_LIMITS),
        "fleet": fleet,
        "telemetry": telemetry,
        "workload": workload,
    }


_NODES = [
    {"node_id": "a", "arch": "x86_64", "instance": "on-demand", "cpu_cores": 16, "mem_gb": 64,
     "price_per_hour_usd": 0.4},
    {"node_id": "b", "arch": "gpu-node", "instance": "spot", "cpu_cores": 16, "mem_gb": 128,
     "price_per_hour_usd": 1.1, "gpu_count": 4, "gpu_model": "T4", "gpu_vram_gb": 16,
     "interruption_prob_per_hour": 0.2},
    {"node_id": "c", "arch": "gpu-node", "instance": "on-demand", "cpu_cores": 32, "mem_gb": 128,
     "price_per_hour_usd": 2.0, "gpu_count": 2, "gpu_model": "A10", "gpu_vram_gb": 24},
]
_SYNTHETIC = {
    "source": "synthetic",
    "resample": "per-episode",
    "options": {"base_rate_per_s": 0.004, "diurnal_amplitude": 0.2, "lc_median_duration_s": 300,
                "batch_median_duration_s": 900, "max_duration_s": 3600, "lc_deadline_slack_s": 300},
}
_JOBS = {
    "source": "jobs",
    "jobs": [
        {"job_id": "j1", "arrival_s": 0, "duration_s": 600, "workload": "latency-critical", "cpu_cores": 2,
         "mem_gb": 4, "deadline_s": 120},
        {"job_id": "j2", "arrival_s": 60, "duration_s": 1200, "workload": "batch", "cpu_cores": 4, "mem_gb": 8,
         "gpu_count": 1, "gpu_vram_gb": 16, "allowed_gpu_models": ["T4", "A10"], "priority": 40, "preemptible": True},
        {"job_id": "j3", "arrival_s": 300, "duration_s": 300, "workload": "stream", "cpu_cores": 1, "mem_gb": 1,
         "required_arch": "x86_64"},
    ],
}


def _groups(machine: str) -> dict[str, Any]:
    return {"kind": "group-mean", "groups": [[machine]] * 3}


SMALL_SCENARIOS: dict[str, tuple[dict[str, Any], dict[str, str | bytes]]] = {
    "small-constant-jobs": (
        _small("small-constant-jobs", {"nodes": _NODES},
               {"reader": "constant", "cpu_pct": [10, 50, 90], "mem_pct": 20, "tick_s": 300}, _JOBS),
        {},
    ),
    "small-generic-csv": (
        _small("small-generic-csv", {"nodes": _NODES[:2]},
               {"reader": "generic", "path": "data/generic.csv",
                "options": {"cpu": "cpu", "mem": "mem", "time": "time", "machine": "machine", "tick_s": 300},
                "mapping": {"kind": "per-machine", "machines": ["m1", "m2"]}},
               _SYNTHETIC),
        {"data/generic.csv": _generic_csv(70)},
    ),
    "small-generic-parquet": (
        _small("small-generic-parquet", {"preset": "default-5"},
               {"reader": "generic", "path": "data/generic.parquet", "options": {"cpu": "cpu", "mem": "mem"},
                "mapping": {"kind": "offset-scale-bias", "nodes": "evenly-spread"}},
               {"source": "swf", "path": "data/log.swf", "options": {"cores_per_proc": 1}}),
        {"data/log.swf": _swf(12)},
    ),
    "small-borg-instances": (
        _small("small-borg-instances",
               {"generate": {"seed": 1, "types": {"cpu": {"arch": "x86_64", "instance": "on-demand", "cpu_cores": 8,
                                                          "mem_gb": 32, "price_per_hour_usd": 0.2}},
                             "counts": {"cpu": 3}}},
               {"reader": "borg2019-instances", "path": "data/borg_instances.csv",
                "options": {"time_unit": "us", "on_long_gap": "fill"},
                "mapping": {"kind": "offset-scale-bias", "nodes": [{"offset": 0}, {"offset": 2, "scale": 0.5},
                                                                   {"offset": 4, "bias_pct": 10}]}},
               {"source": "azure-llm", "path": "data/llm.csv", "options": {"rate_scale": 0.1}}),
        {"data/borg_instances.csv": _borg_instances(120), "data/llm.csv": _llm(20)},
    ),
    "small-borg-cell": (
        _small("small-borg-cell", {"nodes": _NODES},
               {"reader": "borg2019-cell", "path": "data/borg_cell.csv", "mapping": _groups("series")},
               {"source": "alibaba-gpu-2023", "path": "data/pods.csv"}),
        {"data/borg_cell.csv": _borg_cell(24), "data/pods.csv": _pods(16, 0, 3000)},
    ),
    "small-azure2019": (
        _small("small-azure2019", {"nodes": _NODES},
               {"reader": "azure2019-aggregate", "path": "data/azure_aggregate.csv",
                "mapping": _groups("azure-vm-sum")},
               {"source": "azure-vm", "path": "data/vmtable.csv", "options": {"time_window": [0, 3600]}}),
        {"data/azure_aggregate.csv": _azure_aggregate(24), "data/vmtable.csv": _vmtable(8)},
    ),
    "small-alibaba2018-machines": (
        _small("small-alibaba2018-machines", {"nodes": _NODES},
               {"reader": "alibaba2018-machines", "path": "data/machine_usage.csv",
                "options": {"on_long_gap": "fill"}, "mapping": {"kind": "sample", "seed": 3}},
               {"source": "alibaba2017-batch", "path": "data/batch_task.csv"}),
        {"data/machine_usage.csv": _machine_usage(["m1", "m2", "m3", "m4"], 7200, 100),
         "data/batch_task.csv": _batch_tasks(16)},
    ),
    "small-planetlab": (
        _small("small-planetlab", {"nodes": _NODES},
               {"reader": "planetlab", "path": "data/planetlab", "options": {"start_hour": 1, "mem_pct": 10},
                "mapping": {"kind": "group-mean", "groups": [["vm0", "vm1"], ["vm2"], ["vm3"]]}},
               _SYNTHETIC),
        {f"data/planetlab/vm{k}": _planetlab_vm(k) for k in range(4)},
    ),
    "small-alibaba-gpu-fleet": (
        _small("small-alibaba-gpu-fleet", {"alibaba_gpu_csv": {"path": "data/nodes.csv", "per_model": 1, "seed": 2}},
               {"reader": "alibaba2018-mean", "path": "data/dc_mean.csv",
                "mapping": {"kind": "offset-scale-bias", "nodes": "evenly-spread", "mem_scale": 0.5}},
               {"source": "alibaba-gpu-2023", "path": "data/pods.csv", "options": {"limit": 12}}),
        {"data/nodes.csv": _node_list(), "data/dc_mean.csv": _dc_mean(40), "data/pods.csv": _pods(16, 0, 3000)},
    ),
}
"""Name -> (scenario document, files it reads relative to it: path -> content)."""


@dataclass(frozen=True)
class DataSeed:
    """A scenario that reads a file, and which file: the fuzzer mutates the file.

    Attributes:
        scenario: The scenario's name (bundled or of :data:`SMALL_SCENARIOS`).
        key: The key path of the file's path, e.g. ``("workload", "path")``.
        file: The valid file (or, for PlanetLab, the folder) in the world.
    """

    scenario: str
    key: tuple[str, ...]
    file: Path


@dataclass(frozen=True)
class World:
    """The folder :func:`build_world` wrote, and what it holds (shown by its root alone)."""

    root: Path
    traces: Path
    scenarios: dict[str, Path]
    small: frozenset[str]
    data_seeds: tuple[DataSeed, ...]

    def __repr__(self) -> str:
        return f"World({str(self.root)!r})"

    def document(self, name: str) -> dict[str, Any]:
        """The parsed scenario ``name`` (a fresh copy)."""
        data: dict[str, Any] = yaml.safe_load(self.scenarios[name].read_text(encoding="utf-8"))
        return data


def build_world(root: Path) -> World:
    """Write the traces, the bundled and the small scenarios under ``root`` (see the module docstring)."""
    traces, folder = root / TRACES, root / SCENARIOS
    for relative, text in BUNDLED_TRACE_FILES.items():
        _write(traces / relative, text)
    for k in range(6):
        _write(traces / PLANETLAB_DAY / f"host{k}_slice", _planetlab_vm(k))
    shutil.copytree(scenarios.CATALOGUE_DIR / "data", folder / "data")
    paths = {}
    for name in scenarios.names():
        paths[name] = folder / f"{name}.yaml"
        shutil.copyfile(scenarios.path_of(name), paths[name])
    for name, (document, files) in SMALL_SCENARIOS.items():
        paths[name] = folder / f"{name}.yaml"
        paths[name].write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        for relative, text in files.items():
            _write(folder / relative, text)
    generic_parquet_frame().to_parquet(folder / "data" / "generic.parquet")
    world = World(root, traces, paths, frozenset(SMALL_SCENARIOS), ())
    return World(root, traces, paths, frozenset(SMALL_SCENARIOS), tuple(_data_seeds(world)))


def _data_seeds(world: World) -> list[DataSeed]:
    seeds = []
    for name in world.scenarios:
        document = world.document(name)
        for key in (
            ("telemetry", "path"), ("workload", "path"), ("fleet", "alibaba_gpu_csv", "path"),
            ("fleet", "alibaba_spot_gpu_2026_csv", "path"),
        ):
            value: Any = document
            for part in key:
                value = value.get(part) if isinstance(value, dict) else None
            if isinstance(value, str):
                text = value.replace("${ACO_ENV_TRACES}", str(world.traces))
                seeds.append(DataSeed(name, key, (world.scenarios[name].parent / text).resolve()))
    return seeds


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="")
