"""Execution backends: batches of independent units run serially, in a process pool or on Ray."""
