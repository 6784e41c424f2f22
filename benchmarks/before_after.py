"""Engine work measured before and after: the same workloads under two minimod checkouts.

    python3 benchmarks/before_after.py BEFORE_CHECKOUT [--rounds 3] [--workloads ...]

BEFORE_CHECKOUT is another checkout of this repository (e.g. `git worktree add /tmp/before
<commit>`); this script copies the current benchmark scripts into it, so both sides run the
same workload code, then alternates the two checkouts' runs within each round (the order
flipping every round) and prints a Markdown table: samples/s median [min-max] over rounds
and the same-round ratio after / before.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = ("benchutil.py", "workloads.py", "bench_minimod.py")


def run(checkout: Path, net: str, batch: int, mode: str) -> dict:
    subprocess.run([sys.executable, str(HERE / "benchutil.py"), "wait-quiet", "0.25", "2",
                    "60"], check=False)
    out = subprocess.run([sys.executable, str(checkout / "benchmarks" / "bench_minimod.py"),
                          "--net", net, "--batch", str(batch), "--mode", mode],
                         capture_output=True, text=True)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {"error": out.stderr[-500:]}
    return json.loads(lines[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workloads", default="mlp:128:module mlp:32:module "
                        "lenet:64:module lstm:32:module lstm_fused:32:module")
    args = parser.parse_args()
    for name in SCRIPTS:
        shutil.copy(HERE / name, args.before / "benchmarks" / name)
    sides = {"before": args.before, "after": HERE.parent}
    results: dict = {}
    for r in range(args.rounds):
        for wl in args.workloads.split():
            net, batch, mode = wl.split(":")
            order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
            for side in order:
                rec = run(sides[side], net, int(batch), mode)
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
