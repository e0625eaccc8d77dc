"""The oracle's achievable plans: the plan program's options, evict-and-rerun runs, the replay in the twin."""
