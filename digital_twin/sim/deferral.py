"""When a deferred job is asked again: the twin's two deferral rules.

A decision point is a moment at which a queued job fits on some up node. The decision maker
places the job or defers it; a deferred job stays queued (until its TTL) and is asked again
later. *When* is the deferral rule, chosen per defer (``DigitalTwin.defer(until=...)``):

* :data:`NEXT_EVENT` (the default): after the next event of any kind (arrival, completion,
  telemetry tick, spot interruption or recovery, TTL expiry). Right for a decision maker
  whose answer may depend on anything that changes (time, load, the queue): a learned policy,
  or the oracle replaying planned start times.
* :data:`NEW_FIT`: only once the job fits on a node it did not fit on when it was deferred
  (a node freed resources or recovered). Right, and exact, for a decision maker that defers
  only because none of the nodes it would accept has room: more room elsewhere or less room
  anywhere cannot turn its "defer" into a placement, so asking it again after every event
  only repeats the same answer. The ACO scheduler is one (it defers when its strategy leaves
  no candidate among the nodes that fit). Under this rule it gives the identical episode with
  far fewer decisions: a test plays both rules and compares.

The rule never changes what the job costs while it waits: its TTL runs and expires as usual,
and jobs still queued at the horizon are charged as unserved.
"""

from __future__ import annotations

NEXT_EVENT = "next-event"
"""Ask a deferred job again after the next event."""
NEW_FIT = "new-fit"
"""Ask a deferred job again only once it fits on a node it did not fit on when deferred."""
DEFERRALS = (NEXT_EVENT, NEW_FIT)
"""The deferral rules, default first."""
