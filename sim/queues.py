"""Dependency-token queues: which tokens an instruction waits for and releases."""
from __future__ import annotations

from vtalab.spec.errors import SimError
from vtalab.spec.isa import FLAG_QUEUES, QUEUES, Instruction, module_of

QUEUE_DEPTH = 512     # tokens a queue holds; a push to a full queue waits


def token_actions(module: str, insn: Instruction, index: int) -> tuple[list[str], list[str]]:
    """(queues popped before, queues pushed after) for ``insn`` running on ``module``."""
    mapping = FLAG_QUEUES[module]
    pops, pushes = [], []
    for flag in ("pop_prev", "pop_next", "push_prev", "push_next"):
        if getattr(insn, flag):
            if flag not in mapping:
                raise SimError(f"instruction {index} on the {module} module must not set "
                               f"{flag}: the {module} module has no such neighbour")
            (pops if flag.startswith("pop") else pushes).append(mapping[flag])
    return pops, pushes


class TokenQueues:
    def __init__(self, depth: int = QUEUE_DEPTH):
        self.depth = depth
        self.count = dict.fromkeys(QUEUES, 0)

    def can_run(self, pops: list[str], pushes: list[str]) -> bool:
        return all(self.count[q] > 0 for q in pops) and \
            all(self.count[q] < self.depth for q in pushes)

    def pop(self, queues: list[str]) -> None:
        for q in queues:
            self.count[q] -= 1

    def push(self, queues: list[str]) -> None:
        for q in queues:
            self.count[q] += 1

    def why_blocked(self, pops: list[str], pushes: list[str]) -> str:
        reasons = [f"pop from empty queue {q}" for q in pops if self.count[q] == 0]
        reasons += [f"push to full queue {q}" for q in pushes if self.count[q] >= self.depth]
        return ", ".join(reasons)

    def nonempty(self) -> dict[str, int]:
        return {q: n for q, n in self.count.items() if n}
