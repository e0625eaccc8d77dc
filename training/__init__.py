"""Experiments on top of the library: the ``aco-env`` CLI, SB3 training, evaluation, benchmarks."""
