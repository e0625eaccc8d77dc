"""The benchmark suite (``aco-env suite``): versioned tasks, seed splits, cached references, normalised scores.

* :mod:`training.suite.definition`: the suite's file (``suite.yaml``) read and checked;
* :mod:`training.suite.references`: each task's weak baseline and reference on its test seeds, cached;
* :mod:`training.suite.scores`: normalised scores and their aggregates with bootstrap intervals;
* :mod:`training.suite.runner`: agents played on tasks (:class:`~training.suite.runner.SuiteRun`);
* :mod:`training.suite.results_file`, :mod:`training.suite.leaderboard`, :mod:`training.suite.plots`:
  ``suite.json``, the Markdown leaderboard, the plots.
"""
