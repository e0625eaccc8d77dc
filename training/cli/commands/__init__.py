"""One module per ``aco-env`` subcommand (see ``training.cli.main.COMMANDS``)."""
