"""Lower bounds on every policy's objective: the exact relaxation, and the bounds at scale."""
