"""The simulator proper: the event-driven twin, exactly the modules compiled by mypyc (:mod:`digital_twin.native`).

:class:`~digital_twin.sim.twin.DigitalTwin` (the public API, re-exported by :mod:`digital_twin`)
runs one episode of a :class:`~digital_twin.spec.TwinSpec`. Inside, imports point downward:

* ``twin``: the API (reset, place, defer, snapshot, the read methods);
* ``known_durations`` > ``continuation``: the episode as known now, and a twin continued into it;
* ``twin_views``: what callers may read of a state;
* ``event_loop`` > ``event_handlers``: when each event happens, and what it does;
* ``features/``: the optional physics, each owning its part of the state (clocks and
  interference, energy, GPU tallies, placement rules, workflows);
* ``state`` > ``event_log`` | ``job_queue`` > ``constants``: what changes in an episode, and the
  tables derived once from its spec; ``deferral`` and ``measures`` at the bottom.

Conventions: ``s`` is the state, ``c`` the constants, ``j`` a job index, ``i`` a node index,
``q`` a work clock, ``k`` a telemetry tick. This ``__init__`` chooses the compiled build when a
fresh one exists, before any module of the package is imported.
"""

from digital_twin import native

native.activate(__path__)
