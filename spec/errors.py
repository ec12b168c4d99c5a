"""One exception hierarchy for the whole project.

Messages follow the form "<thing> must be <expected>, not <actual>" and name the parameter.
"""


class VtaError(Exception):
    """Root of every error vtalab raises on purpose."""


class ConfigError(VtaError, ValueError):
    """A Config parameter is unknown or has an impossible value."""


class IsaError(VtaError, ValueError):
    """An instruction or micro-op field cannot be encoded or decoded."""


class SimError(VtaError, RuntimeError):
    """A program cannot run to completion on a backend."""


class DeadlockError(SimError):
    """No module can make progress: an instruction waits on a token that never comes."""


class MemoryAccessError(SimError, IndexError):
    """An access falls outside an SRAM buffer or the DRAM."""


class TokenError(SimError):
    """Dependency tokens left over at FINISH, or pushed into a full queue."""


class InstructionError(SimError, IsaError):
    """An instruction the hardware refuses: unknown opcode, memory type or ALU opcode, a
    dependency flag its module does not have, an instruction after FINISH, no FINISH last.
    The message names the instruction's index in the program."""


class WatchdogError(SimError):
    """The hardware did not finish within its cycle limit."""


class DeviceError(VtaError, RuntimeError):
    """A device backend was misused (bad buffer, wrong config, closed device)."""


class ProgramError(VtaError, ValueError):
    """An instruction stream cannot be built as asked (bad argument, unbalanced tokens)."""
