"""The twin's queue of pending jobs: FIFO order, the jobs a pass examines, and parked jobs.

After every batch of events the twin makes a *pass*: it examines pending jobs in FIFO order
(the order they entered the queue) and asks for a decision on each that fits somewhere.
Examining every pending job at every event is what made large, overloaded episodes crawl. A
job that fits nowhere, or one deferred until it fits somewhere new, cannot change its answer
until some node frees resources or recovers, and then only on that node: such a job is
*parked*. It waits in a bucket of its *shape* (jobs of a shape ask the same resources of the
same nodes, so they fit in the same places) and a pass looks at it only when a node it did not
fit on gained room, in FIFO order among the other jobs the pass examines. Once a shape fits on
none of the nodes that gained room (capacity only shrinks during a pass) the rest of its bucket
is not looked at. Parking changes which jobs are looked at, never which are asked or in what
order, so episodes are identical with and without it; a pass costs the jobs it asks about
plus the parked jobs it wakes, not the length of the queue.

The twin drives a pass (it knows the resources); this class keeps the order. Lists hold job
indices and change in place only through these methods.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence


class JobQueue:
    """Pending jobs of one episode.

    Attributes:
        fifo: Every pending job, in FIFO order (``position`` increasing).
        examine: The jobs the current pass examines that are not parked, in FIFO order.
        cursor: Index into ``examine`` of the job being examined; jobs before it were examined
            at the current time (and deferred), and are examined again at the next pass.
        parked: Shape id -> its parked jobs in FIFO order.
        parked_fit: Per job: ``None`` when not parked, else its ``(N,)`` bool fit when it was
            parked (never changed in place); it is asked again only once it fits on a node that
            is False there.
        waking: Shape id -> index into its bucket of the next parked job the current pass looks
            at, for the shapes that may fit on a node that gained room.
        position: Per job, its place in the FIFO order (increasing with every enqueue).
        entered: How many times a job has entered the queue (the next ``position``).
    """

    __slots__ = ("cursor", "entered", "examine", "fifo", "parked", "parked_fit", "position", "waking")

    def __init__(self, n_jobs: int) -> None:
        self.fifo: list[int] = []
        self.examine: list[int] = []
        self.cursor = 0
        self.parked: dict[int, list[int]] = {}
        self.parked_fit: list[Sequence[bool] | None] = [None] * n_jobs
        self.waking: dict[int, int] = {}
        self.position = [0] * n_jobs
        self.entered = 0

    def copy(self) -> JobQueue:
        """An independent copy (the masks in ``parked_fit`` are shared: they never change)."""
        return _queue_of(
            self.fifo.copy(),
            self.examine.copy(),
            self.cursor,
            {shape: jobs.copy() for shape, jobs in self.parked.items()},
            self.parked_fit.copy(),
            self.waking.copy(),
            self.position.copy(),
            self.entered,
        )

    def __reduce__(self) -> tuple[Callable[..., JobQueue], tuple[object, ...]]:
        """Pickle by fields: compiled (:mod:`digital_twin.native`), the class has no default pickling."""
        fields = (self.fifo, self.examine, self.cursor, self.parked, self.parked_fit, self.waking, self.position)
        return _queue_of, (*fields, self.entered)

    def enqueue(self, j: int) -> None:
        """Job ``j`` enters the back of the queue (the next pass examines it)."""
        self.position[j] = self.entered
        self.entered += 1
        self.fifo.append(j)
        self.examine.append(j)

    def start_pass(self, waking: list[int]) -> None:
        """A new pass after a batch of events; the buckets of the shapes ``waking`` are looked at."""
        self.cursor = 0
        self.waking = dict.fromkeys(waking, 0)

    def wake_after(self, position: int) -> None:
        """Look at every parked job after FIFO ``position`` in this pass (a start let any of them fit anew).

        For placement rules that depend on what runs (:mod:`digital_twin.sim.tables.rule_checks`): a start
        can make a parked job fit, and the pass must ask it if it comes later in FIFO order, as
        it would had it not been parked.
        """
        key = self.position.__getitem__
        for shape, bucket in self.parked.items():
            at = bisect.bisect_right(bucket, position, key=key)
            if at < len(bucket):
                self.waking[shape] = max(self.waking.get(shape, at), at)

    def next_parked(self) -> tuple[int, int]:
        """``(shape, job)`` of the earliest parked job the pass may wake, if it comes before the cursor's job.

        Returns ``(-1, -1)`` when the job at the cursor (or the end of the pass) comes first.
        """
        limit = self.position[self.examine[self.cursor]] if self.cursor < len(self.examine) else math.inf
        best_shape, best_job = -1, -1
        for shape, at in self.waking.items():
            j = self.parked[shape][at]
            if self.position[j] < limit:
                limit, best_shape, best_job = self.position[j], shape, j
        return best_shape, best_job

    def fit_when_parked(self, j: int) -> Sequence[bool]:
        """``(N,)`` bool: parked job ``j``'s fit when it was parked.

        Raises:
            ValueError: ``j`` is not parked.
        """
        fit = self.parked_fit[j]
        if fit is None:
            raise ValueError(f"job {j} is not parked")
        return fit

    def skip_parked(self, shape: int) -> None:
        """Leave the bucket head of ``shape`` parked and look at the next one."""
        at = self.waking[shape] + 1
        if at < len(self.parked[shape]):
            self.waking[shape] = at
        else:
            del self.waking[shape]

    def stop_waking(self, shape: int) -> None:
        """No parked job of ``shape`` can fit on a node that gained room this pass."""
        del self.waking[shape]

    def unpark(self, shape: int) -> None:
        """The bucket head of ``shape`` becomes the job at the cursor (it fits somewhere new)."""
        at = self.waking[shape]
        bucket = self.parked[shape]
        j = bucket.pop(at)
        self.parked_fit[j] = None
        if not bucket:
            del self.parked[shape]
        if not bucket or at >= len(bucket):
            del self.waking[shape]
        self.examine.insert(self.cursor, j)  # every job before the cursor is earlier in FIFO order

    def take_current(self) -> None:
        """The job at the cursor leaves the queue (it starts)."""
        self._leave_fifo(self.examine.pop(self.cursor))

    def park_current(self, fit: Sequence[bool], shape: int) -> None:
        """Park the job at the cursor with its node mask ``fit`` (never changed in place)."""
        j = self.examine.pop(self.cursor)
        self.parked_fit[j] = fit
        bucket = self.parked.setdefault(shape, [])
        at = bisect.bisect_left(bucket, self.position[j], key=self.position.__getitem__)
        bucket.insert(at, j)
        if shape in self.waking and at <= self.waking[shape]:
            self.waking[shape] += 1  # examined at this time: not to be looked at again in this pass

    def remove(self, j: int, shape: int) -> None:
        """Job ``j`` leaves the queue wherever it is (its TTL expired); only between passes."""
        self._leave_fifo(j)
        if self.parked_fit[j] is None:
            self.examine.remove(j)
            return
        self.parked_fit[j] = None
        bucket = self.parked[shape]
        bucket.remove(j)
        if not bucket:
            del self.parked[shape]

    def asking_order(self, current: int) -> list[int]:
        """Every pending job, from ``current`` (-1: none) on in FIFO order, then the ones before it."""
        if current < 0 or self.fifo[0] == current:  # the current job is usually the oldest
            return self.fifo.copy()
        at = bisect.bisect_left(self.fifo, self.position[current], key=self.position.__getitem__)
        return self.fifo[at:] + self.fifo[:at]

    def _leave_fifo(self, j: int) -> None:
        if self.fifo[0] == j:  # the job that starts is usually the oldest
            del self.fifo[0]
            return
        at = bisect.bisect_left(self.fifo, self.position[j], key=self.position.__getitem__)
        del self.fifo[at]


def _queue_of(
    fifo: list[int],
    examine: list[int],
    cursor: int,
    parked: dict[int, list[int]],
    parked_fit: list[Sequence[bool] | None],
    waking: dict[int, int],
    position: list[int],
    entered: int,
) -> JobQueue:
    """A queue with these fields (taken, not copied)."""
    queue = JobQueue(0)
    queue.fifo, queue.examine, queue.cursor, queue.parked = fifo, examine, cursor, parked
    queue.parked_fit, queue.waking, queue.position, queue.entered = parked_fit, waking, position, entered
    return queue
