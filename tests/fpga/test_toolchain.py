"""The open-flow step runner: a stalled timing rip-up is stopped and routed again without it,
a diverging route is stopped."""
from __future__ import annotations

import sys
import textwrap

import pytest

from vtalab.fpga import toolchain
from vtalab.fpga.errors import PlaceRouteError
from vtalab.fpga.toolchain import RouteWatch


def _iter(n, overused, failing):
    return f"Info:     iter={n} wires=662511 overused={overused} overuse={overused} " \
           f"tmgfail={failing} archfail=NA"


def test_the_watch_waits_out_congestion_and_every_new_low_of_failing_arcs():
    watch = RouteWatch(window=10)
    assert not watch.stalled([_iter(n, 500 - n, 0) for n in range(1, 31)])  # congestion
    assert not watch.stalled([_iter(n, 0, 20) for n in range(31, 40)])      # 9 iterations
    assert not watch.stalled([_iter(40, 0, 18)])                            # a new low
    assert not watch.stalled([_iter(n, 0, 19) for n in range(41, 50)])
    assert watch.stalled([_iter(50, 0, 19), "Info: something else"])        # 10 since 18
    again = RouteWatch(window=10)
    assert not again.stalled([_iter(n, 0, 3) for n in range(1, 11)] + [_iter(11, 2, 3)])
    assert not again.stalled([_iter(n, 0, 0) for n in range(12, 40)])       # timing met


def test_the_watch_stops_a_rip_up_that_undoes_the_routing():
    watch = RouteWatch(window=10)
    falling = [_iter(n, 20000 - 1000 * n, 900) for n in range(1, 16)]   # low: 5000 at 15
    assert not watch.stalled(falling)
    assert not watch.stalled([_iter(n, 6000 + 400 * (n - 16), 2000) for n in range(16, 25)])
    assert not watch.stalled([_iter(25, 10400, 5000)])              # 10 after, 2x + 500 short
    assert watch.stalled([_iter(26, 11000, 5000)])
    assert watch.reason == "11000 overused wires at iteration 26, 5000 at 15"
    wobbling = RouteWatch(window=1000)                 # small counts near the end: routing
    assert not wobbling.stalled([_iter(n, 11 + (n % 3) * 20, 40) for n in range(1, 200)])


def test_the_same_lines_read_twice_count_once():
    watch = RouteWatch(window=5)
    lines = [_iter(n, 0, 4) for n in range(1, 5)]
    assert not watch.stalled(lines) and not watch.stalled(lines)
    assert watch.stalled(lines + [_iter(6, 0, 4)])
    assert watch.reason == "no fewer than 4 failing arcs in 5 iterations"


FAKE_NEXTPNR = textwrap.dedent('''
    import sys, time
    args = sys.argv[1:]
    log = args[args.index("--log") + 1]
    open("argv.txt", "a").write(" ".join(args) + "\\n")
    with open(log, "w") as out:
        if "--tmg-ripup" not in args:
            out.write("Info: Program finished normally.\\n")
            sys.exit(0)
        for n in range(1, 100000):              # never meets timing: the watch must stop it
            out.write(f"Info:     iter={n} wires=10 overused=0 overuse=0 tmgfail=7 "
                      "archfail=NA\\n")
            out.flush()
            time.sleep(0.002)
''')


# overused wires down to 100, then up again: with or without the rip-up
DIVERGING_NEXTPNR = textwrap.dedent('''
    import sys, time
    args = sys.argv[1:]
    log = args[args.index("--log") + 1]
    open("argv.txt", "a").write(" ".join(args) + "\\n")
    failing = " tmgfail=30" if "--tmg-ripup" in args else ""
    with open(log, "w") as out:
        for n in range(1, 100000):
            overused = 2000 - 100 * n if n < 20 else 100 + 50 * (n - 19)
            out.write(f"Info:     iter={n} wires=10 overused={overused} overuse={overused}"
                      f"{failing} archfail=NA\\n")
            out.flush()
            time.sleep(0.005)
''')


def _fake_tool(tmp_path, monkeypatch, script: str):
    fake = tmp_path / "fake_nextpnr.py"
    fake.write_text(script)
    tool = tmp_path / "nextpnr"
    tool.write_text(f"#!/bin/sh\nexec {sys.executable} {fake} \"$@\"\n")
    tool.chmod(0o755)
    monkeypatch.setattr(toolchain, "HEARTBEAT_S", 0.2)
    monkeypatch.setattr(toolchain, "RIPUP_STALL_ITERS", 20)
    return {"NEXTPNR_ECP5": str(tool)}


def test_a_diverging_route_is_stopped_with_and_then_without_the_ripup(tmp_path, monkeypatch):
    env = _fake_tool(tmp_path, monkeypatch, DIVERGING_NEXTPNR)
    said = []
    steps = [("NEXTPNR_ECP5", ["--log", "top.tim", "--router", "router2", "--tmg-ripup"])]
    with pytest.raises(PlaceRouteError, match="place and route \\(nextpnr-ecp5\\) must converge "
                                              "on this placement, not have its routing diverge "
                                              "\\([0-9]+ overused wires at iteration [0-9]+, "
                                              "100 at 19"):
        toolchain.run_steps(tmp_path, steps, env, said.append)
    runs = (tmp_path / "argv.txt").read_text().splitlines()
    assert runs == ["--log top.tim --router router2 --tmg-ripup", "--log top.tim --router router2"]
    assert any("timing rip-up stalled" in line and "100 at 19" in line for line in said)


def test_a_stalled_ripup_is_routed_again_without_it(tmp_path, monkeypatch):
    env = _fake_tool(tmp_path, monkeypatch, FAKE_NEXTPNR)
    said = []
    steps = [("NEXTPNR_ECP5", ["--log", "top.tim", "--router", "router2", "--tmg-ripup"])]
    times = toolchain.run_steps(tmp_path, steps, env, said.append)
    runs = (tmp_path / "argv.txt").read_text().splitlines()
    assert runs == ["--log top.tim --router router2 --tmg-ripup", "--log top.tim --router router2"]
    assert set(times) == {"nextpnr_ecp5", "nextpnr_ecp5_ripup_stalled"}
    assert any("timing rip-up stalled" in line for line in said)
