"""vtalab.hw: the accelerator in Amaranth HDL, one component per module.

``core.Core(cfg)`` composes ``fetch``, ``load``, ``compute`` (with ``exec_pipe``,
``uop_loop``, ``gemm_tree``, ``alu``), ``store``, ``token_queue``, ``sram`` buffers, the
``axi_master`` and the ``control`` registers; ``verilog.generate(cfg)`` writes it out.
Every field position comes from spec/isa.py through ``isa_layout``.
"""
