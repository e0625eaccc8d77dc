"""Serving trained agents on real schedulers: a placement service, a Kubernetes extender, a Slurm bridge.

The environment trains a scheduler; this package carries it to real clusters by three paths,
all on one core (docs/serving.md is the user's page):

* :mod:`serving.app`: an HTTP placement service (FastAPI on uvicorn, the ``serve`` extra;
  ``aco-env serve``): jobs submitted, finished and cancelled, node telemetry and spot outages
  pushed by the caller; answers where each job starts.
* :mod:`serving.kube`: a kube-scheduler extender (``filter``, ``prioritize``) on the same service.
* :mod:`serving.slurm`: an external scheduler for a real slurmctld (``aco-env slurm-bridge``).

**The live cluster is the env's twin, continued.** :class:`serving.live.LiveCluster` keeps what
the cluster pushed as the spec of its episode so far (:class:`serving.known.KnownEpisode`: the
same :class:`digital_twin.TwinSpec`, :class:`digital_twin.JobSpec` and
:class:`digital_twin.Telemetry` the env builds from a scenario) and a
:class:`digital_twin.DigitalTwin` standing at the last decision. Each batch of events writes the
spec anew and continues that twin into it (:meth:`digital_twin.DigitalTwin.continued_in`,
exact because nothing before the decision changes), then runs it to every decision up to the
batch's time. The agent decides in a :class:`serving.live_env.LiveEnv`, a
:class:`aco_env.TwinEnv` attached to that twin: the observation is encoded and the
:class:`aco_env.ClusterView` built by the same code as in training, from a twin in the same
state, so a recorded episode replayed as events gives bit-identical observations and the same
decisions (:mod:`serving.parity`; tests/serving/test_parity.py). What differs from the env is
where the future comes from: run times end when the cluster says (the live twin has no contention
model), the telemetry is held after its last push, and spot outages are the reported ones.

Layering: ``serving`` imports ``agents``, ``aco_env``, ``digital_twin`` and ``scenarios``; only
``training.cli`` imports it (import-linter contracts in pyproject.toml), and ``import aco_env``
never loads FastAPI or uvicorn.
"""
