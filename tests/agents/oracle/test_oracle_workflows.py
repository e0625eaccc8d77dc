"""The oracle refuses workflow episodes (it models no precedence): never an invalid plan or bound."""

from __future__ import annotations

import numpy as np
import pytest

from agents.oracle import OracleUnsupportedError, solve_oracle
from digital_twin import DigitalTwin
from digital_twin.workload import Workload
from tests.small_twins import batch, spec_of


def test_solve_oracle__refuses_an_episode_with_workflows() -> None:
    jobs = Workload.of([batch("a", 0.0, 60.0, workflow="w"), batch("b", 0.0, 60.0, workflow="w", parents=("a",))])
    twin = DigitalTwin(spec_of(jobs))  # type: ignore[arg-type]
    twin.reset(np.random.default_rng(0))
    with pytest.raises(OracleUnsupportedError, match="the episode has workflows"):
        solve_oracle(twin.hindsight())
