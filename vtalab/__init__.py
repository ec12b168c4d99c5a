"""vtalab: hardware-software co-design for a VTA-style tensor accelerator.

This package is the face on top of the layers (``vtalab.spec``, ``vtalab.hw``,
``vtalab.sim``, ``vtalab.runtime``, ``vtalab.compiler``, ``vtalab.fpga``). Importing it is
cheap: nothing below is imported until asked for.
"""
__version__ = "0.1.0"
