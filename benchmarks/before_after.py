"""Engine work measured before and after: the same workloads under two minimod checkouts.

    python3 benchmarks/before_after.py BEFORE_CHECKOUT [--rounds 3] [--workloads ...]

BEFORE_CHECKOUT is another checkout of this repository (e.g. `git worktree add /tmp/before
<commit>`); this script copies the current benchmark scripts into it, so both sides run the
same workload code. Each round runs a workload's two sides in lockstep (lockstep.py: two
concurrent processes taking turns, one timing window each, the first turn alternating
between rounds), so a round's ratio compares the same seconds of the machine. It prints a
Markdown table: samples/s median [min-max] over rounds and the same-round ratio
after / before. Extra options after `--` go to both bench_minimod.py runs (e.g.
`-- --window 0.2 --quiet-windows 5`).
"""
from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = ("benchutil.py", "workloads.py", "workloads_more.py", "bench_minimod.py")


SIDES = ("before", "after")


def run_pair(checkouts: dict, net: str, batch: int, mode: str, first: int,
             extra: list) -> dict:
    """One lockstep run of both sides: {side: its JSON record} (an "error" key when a side
    gave no result); `first` is the index in SIDES of the side that times first."""
    subprocess.run([sys.executable, str(HERE / "benchutil.py"), "wait-quiet", "0.25", "2",
                    "60"], check=False)
    commands = [shlex.join([sys.executable, str(checkouts[side] / "benchmarks" /
                                                "bench_minimod.py"),
                            "--net", net, "--batch", str(batch), "--mode", mode] + extra)
                for side in SIDES]
    out = subprocess.run([sys.executable, str(HERE / "lockstep.py"), "--rotate", str(first),
                          "--names", ",".join(SIDES), "--"] + commands,
                         capture_output=True, text=True)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if len(lines) != len(SIDES):
        return {side: {"error": out.stderr[-500:]} for side in SIDES}
    return {side: json.loads(line) for side, line in zip(SIDES, lines)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workloads", default="mlp:128:module mlp:32:module "
                        "lenet:64:module lstm:32:module lstm_fused:32:module")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:cut])
    args.extra = argv[cut + 1:]  # options for both sides' bench_minimod.py
    target = args.before.resolve() / "benchmarks"
    if target != HERE:
        for name in SCRIPTS:
            shutil.copy(HERE / name, target / name)
    checkouts = {"before": args.before.resolve(), "after": HERE.parent}
    results: dict = {}
    for r in range(args.rounds):
        for wl in args.workloads.split():
            net, batch, mode = wl.split(":")
            recs = run_pair(checkouts, net, int(batch), mode, r % 2, args.extra)
            for side in SIDES:
                rec = recs[side]
                print(json.dumps(dict(rec, side=side, round=r)), file=sys.stderr, flush=True)
                results.setdefault((wl, side), {})[r] = rec.get("samples_per_s")
    print("| workload | before samples/s | after samples/s | after / before (same round) |")
    print("|---|---|---|---|")
    for wl in args.workloads.split():
        b, a = results.get((wl, "before"), {}), results.get((wl, "after"), {})
        ratios = [a[r] / b[r] for r in a if r in b and a[r] and b[r]]

        def fmt(d):
            v = [x for x in d.values() if x]
            return "%.0f [%.0f-%.0f]" % (statistics.median(v), min(v), max(v)) if v else "-"
        print("| %s | %s | %s | %s |" % (wl, fmt(b), fmt(a), "%.2f [%.2f-%.2f]" % (
            statistics.median(ratios), min(ratios), max(ratios)) if ratios else "-"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
