"""The mixed-integer programs over placement options that the plan and the exact bound solve, and their limits."""
