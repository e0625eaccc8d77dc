"""Rendering a :class:`ClusterView`: a text table (``ansi``) or a matplotlib image (``rgb_array``)."""

from __future__ import annotations

import numpy as np

from aco_env.views import ClusterView
from digital_twin import ObjectiveBreakdown

RGB_SHAPE = (480, 800, 3)
"""Height, width, channels of ``render()`` in ``rgb_array`` mode."""


def render_ansi(view: ClusterView, objective: ObjectiveBreakdown) -> str:
    """A node table with the current job and the objective so far."""
    lines = [f"t = {view.time_s:,.0f} s   objective so far: {objective.total_usd:.4f} USD"]
    job = view.job
    if job is None:
        lines.append("episode over")
    else:
        lines.append(
            f"job {job.job_id}: {job.workload}, {job.cpu_cores:g} cpu, {job.mem_gb:g} GB, "
            f"{job.gpu_count} GPU, {job.duration_s:,.0f} s; {len(view.queue)} more queued"
        )
    lines.append(
        f"{'#':>2} {'node':<16} {'type':<10} {'$/h':>6} {'free cpu':>9} {'free GB':>8} "
        f"{'GPU':>4} {'util %':>7} {'up':>3} {'ok':>3}"
    )
    for i, node in enumerate(view.fleet):
        lines.append(
            f"{i:>2} {node.node_id:<16} {node.instance:<10} {node.price_per_hour_usd:>6.2f} "
            f"{view.free_cpu_cores[i]:>9.1f} {view.free_mem_gb[i]:>8.1f} {int(view.free_gpus[i]):>4} "
            f"{view.utilization_pct[i]:>7.1f} {'y' if view.up[i] else 'n':>3} "
            f"{'y' if view.action_mask[i] else '-':>3}"
        )
    return "\n".join(lines) + "\n"


def render_rgb_array(view: ClusterView) -> np.ndarray:
    """Bars of background and allocated cpu per node, and the queue length: ``RGB_SHAPE`` uint8."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    height, width, _ = RGB_SHAPE
    figure = Figure(figsize=(width / 100, height / 100), dpi=100)
    canvas = FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    names = [n.node_id for n in view.fleet]
    cpu = np.array([n.cpu_cores for n in view.fleet])
    allocated_pct = 100.0 * (cpu - view.free_cpu_cores) / cpu
    x = np.arange(len(names))
    axes.bar(x, view.background_cpu_pct, color="#9aa5b1", label="background cpu %")
    axes.bar(x, allocated_pct, bottom=view.background_cpu_pct, color="#2f80ed", label="our jobs cpu %")
    for i, up in enumerate(view.up):
        if not up:
            axes.text(i, 5, "down", ha="center", color="red")
    axes.axhline(100, color="black", linewidth=0.5)
    axes.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
    axes.set_ylim(0, 200)
    axes.set_ylabel("utilisation %")
    axes.set_title(f"t = {view.time_s:,.0f} s, queue {len(view.queue) + (view.job is not None)}")
    axes.legend(loc="upper right", fontsize=8)
    figure.tight_layout()
    canvas.draw()
    image = np.asarray(canvas.buffer_rgba())[:, :, :3]
    return np.ascontiguousarray(image[:height, :width])
