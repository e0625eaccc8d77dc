"""The one bound on waiting in the tests: a guard against a hang, never a check of speed.

No test asserts a wall time (the machine may be shared and loaded; speed is measured by the
benchmarks, in CPU-time ratios). A test that waits for a child process, a server or a cluster
waits at most :data:`HANG_GUARD_S`, so that a hang fails the test instead of blocking the suite
forever. Every wait it bounds takes well under a tenth of it on a loaded 2-core machine, so
reaching it means the awaited thing will never happen, not that it is slow.
"""

HANG_GUARD_S = 900.0
"""Seconds a test waits for a process, a server or a cluster before calling it hung."""
