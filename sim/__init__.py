"""vtalab.sim: the bit-exact functional simulator and the RTL simulation harnesses."""
