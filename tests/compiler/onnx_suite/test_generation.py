"""The node cases' cache is written by one process at a time: test workers on a fresh
cache must not write the same files at once (one read another's half-written model)."""
import threading
import time

from vtalab.compiler.exec import conformance


def test_concurrent_callers_wait_for_one_writer(tmp_path, monkeypatch):
    active, peak, writes = [0], [0], []

    def slow_write(root, manifest):
        active[0] += 1
        peak[0] = max(peak[0], active[0])
        writes.append(root)
        time.sleep(0.3)
        root.mkdir(parents=True, exist_ok=True)
        manifest.write_text("[]")
        active[0] -= 1

    monkeypatch.setattr(conformance, "_write_cases", slow_write)
    root = tmp_path / "onnx-node" / "1.0"
    found = []
    callers = [threading.Thread(target=lambda: found.append(conformance.generate(root)))
               for _ in range(3)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert peak[0] == 1 and len(writes) == 1
    assert found == [root / "manifest.json"] * 3
    assert conformance.node_cases(root) == {}
