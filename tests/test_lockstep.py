"""benchmarks/lockstep.py: concurrent peers take turns, one timing window at a time, so their
windows never overlap; a peer that dies still gets its error line."""
import json
import os
import subprocess
import sys

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks")

# A stand-in peer: a 2 ms "step" (sleep), timed by benchutil.WindowTimer like the real
# peers; it prints the monotonic clock of every step inside its windows. Every window counts
# as quiet (quiet_cores=inf) so that the window count does not depend on the machine's load.
PEER = r"""
import json, os, sys, time
sys.path.insert(0, {bench!r})
import benchutil
name = sys.argv[1]
stamps = []
def step():
    time.sleep(0.002)
timer = benchutil.WindowTimer(lambda: None, 1, window_s=0.03, warmup_s=0.02, want_quiet=4,
                              quiet_cores=float("inf"), max_s=5.0)
while not timer.done:
    step()
    if timer.phase == "windows":
        stamps.append(time.monotonic())
    timer.tick()
if name == "dies":
    sys.exit(3)
print(json.dumps({{"lib": name, "stamps": stamps, "windows": len(timer.windows)}}))
"""


def _run(tmp_path, names):
    peer = tmp_path / "peer.py"
    peer.write_text(PEER.format(bench=BENCH))
    cmds = ["%s %s %s" % (sys.executable, peer, n) for n in names]
    meta = json.dumps({"net": "mlp", "round": 2})
    out = subprocess.run([sys.executable, os.path.join(BENCH, "lockstep.py"), "--names",
                          ",".join(names), "--meta", meta, "--"] + cmds,
                         capture_output=True, text=True, timeout=120, check=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_peers_take_turns_window_by_window(tmp_path):
    a, b = _run(tmp_path, ["a", "b"])
    assert (a["lib"], b["lib"]) == ("a", "b")
    assert a["windows"] == b["windows"] == 4
    steps = sorted([(t, "a") for t in a["stamps"]] + [(t, "b") for t in b["stamps"]])
    runs = [1]
    for (_, prev), (_, cur) in zip(steps, steps[1:]):
        if cur == prev:
            runs[-1] += 1
        else:
            runs.append(1)
    # Run concurrently, 2 ms steps of two processes would interleave step by step; taking
    # turns, each window (about 15 steps) is one unbroken run, and the turns alternate.
    assert len(runs) == 8, runs
    assert min(runs) >= 5, runs


def test_a_peer_without_a_result_gets_an_error_line(tmp_path):
    good, dead = _run(tmp_path, ["a", "dies"])
    assert good["lib"] == "a" and good["windows"] == 4
    assert dead["lib"] == "dies" and dead["net"] == "mlp" and dead["round"] == 2
    assert "exit status 3" in dead["error"]
