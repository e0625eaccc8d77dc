"""The simulator's optional physics, one concern per module (compiled with :mod:`digital_twin.sim`).

Work clocks (``contention``, ``interference``, ``work_clocks``), energy (``energy_constants``,
``energy_accounting``), GPU tallies (``gpu_fragmentation``), placement rules (``rule_tables``,
``colocation``, ``rule_checks``, ``rule_events``) and workflows (``workflow_events``,
``workflow_handlers``). This ``__init__`` chooses the compiled build like :mod:`digital_twin.sim`'s.
"""

from digital_twin import native

native.activate(__path__, "sim.features")
