"""vtalab.fpga"""
