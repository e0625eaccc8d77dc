"""Episodes recorded by an earlier version replay bit for bit: changes to the twin's internals
(such as the parked queue) must not change a single observation, reward or end flag.

The recordings in ``tests/data/recordings`` were made at commit 6d72a11 (before parked jobs):
first-fit, ACO (both deferral rules), random and cheapest, on the default scenario, the toy and
an overloaded fleet whose queues grow long. The default scenario has since moved to cpu
contention (schema 2); its recordings now point at ``tests/data/fleet5-synthetic-v1.yaml``, the
file as it was then (only its data path is relative to ``tests/data``), so they still check that
the twin without interference is unchanged. The three ``fleet5-contention-*`` recordings
(``tests/data/fleet5-contention.yaml``, cpu contention) were re-made when a node's completions
moved to one event on a work clock: the same actions and objectives up to float rounding
(last digits), and ACO's deferring episode asks 74 decisions instead of 92 because a replaced
completion event no longer wakes the loop. All but the toy's were re-made again when stale heap
entries (the TTL expiry of a job that started, the completion of an evicted run) stopped waking
the loop and every queue spell's wait began to count: the same actions and objectives up to
float rounding (an interval the loop no longer stops in accrues its cost in one product), ACO's
deferring episodes ask fewer decisions (67 instead of 74 under contention, 66 instead of 73, 1287
instead of 1291 on the overloaded fleet), and the overloaded fleet's requeued jobs wait again
(its mean wait, 1014.6 s before, is 1028.6 s; its scenario puts no price on waiting). Jobs
declare durations since, and the observation shows the declaration: the recordings' scenario
files declare ``exact`` (their content hashes re-pinned), so the episodes replay as recorded.
When the node column ``qos_risk`` was added to the observation, every recording was re-made
from its own actions: the same rewards to the bit, end flags and episode metrics, new
observation digests. So were they when the grid columns came (env ``v4``): the same actions,
rewards, end flags and recorded episode metrics to the bit (the metrics now also list energy
and emissions), new observation digests. And when the workflow columns came (env ``v5``): the
same again, the metrics listing the preference and workflow terms; two recordings of
``fleet5-workflows`` (``mc-wscpt`` and ACO) were added then, so workflow episodes replay too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aco_env.recording import load_recording, replay_recording
from tests.paths import DATA

RECORDINGS = sorted((DATA / "recordings").glob("*.json"))


def test_recordings__are_present() -> None:
    """The fixture recordings exist (a glob that finds nothing would make the test below vacuous)."""
    assert len(RECORDINGS) >= 7


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
def test_recorded_episode__replays_bit_for_bit(path: Path) -> None:
    """Every step's action, observation digest, exact reward and end flags match; the file is complete."""
    record = load_recording(path)
    if record["scenario"]["bundled"] is None:  # a test scenario: recorded elsewhere, read from here
        record["scenario"]["path"] = str(DATA / Path(record["scenario"]["path"]).name)
    report = replay_recording(record)
    assert report.matched, report.first_mismatch
    assert report.complete and not report.scenario_changed
    assert report.steps == len(record["steps"])
