"""The pipeline registers the exec pipe builds: reset-less, loaded when enabled; and copies
of a control flip-flop, one beside each group of its loads."""
from __future__ import annotations

from amaranth.hdl import ClockSignal, Const, Instance, Module, ResetSignal, Signal


def enabled_register(m: Module, value, enable, name: str, shape=None) -> Signal:
    """A reset-less register of ``shape`` (default: ``value``'s) that loads ``value``
    when ``enable`` is high and holds otherwise."""
    reg = Signal(value.shape() if shape is None else shape, name=name, reset_less=True)
    with m.If(enable):
        m.d.sync += reg.eq(value)
    return reg


def replicates(platform) -> bool:
    """Whether control flip-flops are copied per group of their loads: on platforms that
    ask for it (``vtalab_lane_groups``: the open FPGA flow, whose placer and router do not
    replicate anything; hw/verilog.OpenFlowPlatform), not for cycle simulators or the
    vendor flows (their tools replicate by themselves)."""
    return bool(getattr(platform, "vtalab_lane_groups", False))


def replicated_register(m: Module, platform, value, copies: int, name: str,
                        enable=None, reset: bool = True) -> list:
    """``copies`` registers that all load ``value`` every cycle, or when ``enable`` is high
    (0 after reset, or not reset with ``reset=False``): one per group of a signal's loads,
    so that no single flip-flop drives a net spread over a large array (the placer puts
    each copy beside its group).

    On ECP5 each bit of each copy is a TRELLIS_FF instance: Yosys merges equal flip-flops
    (a ``keep`` on the wire does not stop it), an instance it leaves alone. Where
    :func:`replicates` is false, one register stands for all copies."""
    width = len(value)
    if isinstance(enable, Const) and enable.value == 1:
        enable = None
    names = [name] if not replicates(platform) else [f"{name}_{k}" for k in range(copies)]
    regs = [Signal(width, name=n, reset_less=not reset) for n in names]
    if not replicates(platform) or getattr(platform, "family", None) != "ecp5":
        with m.If(1 if enable is None else enable):
            m.d.sync += [reg.eq(value) for reg in regs]
        return regs * (copies // len(regs))
    for k, reg in enumerate(regs):
        for bit in range(width):
            m.submodules[f"{name}_{k}_ff{bit}"] = Instance(
                "TRELLIS_FF", p_GSR="DISABLED", p_CEMUX="1" if enable is None else "CE",
                p_CLKMUX="CLK", p_LSRMUX="LSR", p_REGSET="RESET", p_SRMODE="LSR_OVER_CE",
                i_CLK=ClockSignal("sync"), i_CE=1 if enable is None else enable,
                i_LSR=ResetSignal("sync") if reset else Const(0), i_DI=value[bit],
                o_Q=reg[bit])
    return regs


def register_copies(m: Module, platform, register, loads, copies: int, name: str,
                    enable=None) -> list:
    """``copies`` stand-ins for ``register`` (which loads ``loads`` when ``enable``): the
    register itself for every one when a single group or where :func:`replicates` is
    false, else that many :func:`replicated_register` copies loading what it loads."""
    if copies == 1 or not replicates(platform):
        return [register] * copies
    return replicated_register(m, platform, loads, copies, name, enable=enable)
