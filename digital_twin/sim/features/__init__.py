"""The simulator's optional physics, each a state class with its hooks (compiled with :mod:`digital_twin.sim`).

GPU tallies (``gpus``), energy (``energy_accounting``), placement rules (``rule_events``),
workflows (``workflow_handlers``), spot outages (``outages``), and runs on work clocks under
contention and interference (``work_clocks``). Their tables and pure rules are in
:mod:`digital_twin.sim.tables`. This ``__init__`` chooses the compiled build like
:mod:`digital_twin.sim`'s.
"""

from digital_twin import native

native.activate(__path__, "sim.features")
