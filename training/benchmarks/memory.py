"""Peak memory of one default episode, measured in a fresh Python process.

``peak_rss_mb`` is the process's peak resident set (interpreter, NumPy, Gymnasium and the
episode); ``episode_peak_traced_mb`` is tracemalloc's peak of Python allocations during
``reset`` + the episode only (what the environment itself holds).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

_CHILD = r"""
import json, tracemalloc
import gymnasium as gym, numpy as np
import aco_env
env = gym.make(aco_env.registration.FLEET5_ID)
tracemalloc.start()
obs, _ = env.reset(seed=0)
steps = 0
while True:
    obs, _, terminated, truncated, _ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    steps += 1
    if terminated or truncated:
        break
_, peak = tracemalloc.get_traced_memory()
# VmHWM, not ru_maxrss: the latter keeps the parent's high-water mark across fork + exec.
hwm_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"episode_peak_traced_mb": peak / 2**20, "steps": steps, "peak_rss_mb": hwm_kb / 1024}))
"""


def bench_memory() -> dict[str, Any]:
    """Run one first-fit episode of ``aco_env/Fleet5-v6`` in a child process and report its memory."""
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])
