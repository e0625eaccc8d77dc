"""``aco-env rllib``: RLlib's PPO with a masking module, its env creator, and its checkpoints as agents."""
