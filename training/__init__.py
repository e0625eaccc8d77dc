"""Experiments on top of the library: the ``aco-env`` CLI and everything it runs.

The sub-packages, each importing only those listed below it (the import-linter contracts in
``pyproject.toml``; the packages of one bullet are independent of each other):

* :mod:`training.cli`: the ``aco-env`` entry point (:mod:`training.cli.main`), one module per
  subcommand (:mod:`training.cli.commands`) and the ``--backend``/``--address`` options;
* :mod:`training.benchmarks` (``aco-env bench``), :mod:`training.reproduction` (``aco-env
  reproduce``: the reference's benchmarks) and :mod:`training.scale` (sweeps on Ray Tune,
  PPO on RLlib);
* :mod:`training.learning`: SB3 training (``aco-env train`` and ``run``), its options, run
  directories, callbacks, behaviour cloning and DAgger, learning curves;
* :mod:`training.suite`: the benchmark suite (``aco-env suite``): its tasks and seed splits, their
  cached references, normalised scores and their aggregates, the leaderboard;
* :mod:`training.evaluation`: episodes played, agents scored over paired seeds, results written,
  printed (the leaderboard) and plotted;
* :mod:`training.execution` (the backends that run batches of units: serial, processes, Ray) and
  :mod:`training.checks` (the checks of a command's arguments and outputs);
* :mod:`training.errors` (user errors and exit codes) and :mod:`training.progress` (progress bars).
"""
