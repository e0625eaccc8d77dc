"""The simulator proper: the event-driven twin, exactly the modules compiled by mypyc (:mod:`digital_twin.native`).

:class:`~digital_twin.sim.twin.DigitalTwin` (the public API, re-exported by :mod:`digital_twin`)
runs one episode of a :class:`~digital_twin.spec.TwinSpec`. Inside, imports point downward (a
contract in pyproject.toml):

* ``twin``: the API (reset, place, defer, snapshot, continued_in, the read methods);
* ``known_durations`` > ``continuation`` | ``twin_views``: the episode as known now, a twin
  continued into another future, and what callers may read of a state;
* ``event_loop`` > ``event_handlers``: when each event happens, and what it does to the core
  before each feature's hook runs;
* ``state``: :class:`~digital_twin.sim.state.TwinState`, the core plus the features an episode
  switches on (:data:`~digital_twin.sim.state.FEATURES`);
* ``features/``: the optional physics, each owning its state and hooks (GPU tallies, energy,
  placement rules, workflows, spot outages, and the work clocks that replace nominal runs);
* ``event_log`` > ``core``: the state every episode has, the ``Feature`` and ``Runs`` extension
  points; ``nodes`` | ``job_states`` | ``job_queue``: its parts;
* ``constants`` > ``tables/``: what an episode never changes, derived once from its spec;
  ``deferral`` and ``measures`` at the bottom.

Conventions: ``s`` is the state, ``c`` the constants, ``j`` a job index, ``i`` a node index,
``q`` a work clock, ``k`` a telemetry tick. This ``__init__`` chooses the compiled build when a
fresh one exists, before any module of the package is imported.
"""

from digital_twin import native

native.activate(__path__)
