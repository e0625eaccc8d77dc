"""``aco-env sweep``: ``aco-env train`` runs over a search space of hyperparameters and seeds, on Ray Tune."""
