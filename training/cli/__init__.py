"""The ``aco-env`` command line: the entry point (:mod:`training.cli.main`) and one module per subcommand."""
