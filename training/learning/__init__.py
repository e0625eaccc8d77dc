"""Learning with SB3: the training options, the run directory, callbacks, imitation and learning curves."""
