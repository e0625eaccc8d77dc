"""What the simulator reads and never changes, per concern, and the pure rules over it.

The tables :class:`~digital_twin.sim.constants.TwinConstants` holds (energy, GPU job mix,
interference lanes, placement rules, workflows) and the rules that read them (processor
sharing, the rule checks, the workflow rules); compiled with :mod:`digital_twin.sim`, whose
build this ``__init__`` chooses likewise.
"""

from digital_twin import native

native.activate(__path__, "sim.tables")
