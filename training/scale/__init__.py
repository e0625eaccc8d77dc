"""Training at scale on Ray: hyperparameter and seed sweeps (Ray Tune) and distributed PPO (RLlib)."""
