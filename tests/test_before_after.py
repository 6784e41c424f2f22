"""benchmarks/before_after.py: two checkouts of a workload run in lockstep, round by round."""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def test_before_after_runs_both_sides_in_lockstep_and_prints_same_round_ratios():
    # this checkout against itself, with tiny timing windows: the table row and the per-run
    # records are what is checked, not the figures
    out = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "before_after.py"), ROOT,
         "--rounds", "2", "--workloads", "mlp:8:module", "--",
         "--window", "0.03", "--warmup", "0.05", "--quiet-windows", "2", "--max-s", "5",
         "--quiet-cores", "10"],
        capture_output=True, text=True, timeout=300, check=True)
    row = [ln for ln in out.stdout.splitlines() if ln.startswith("| mlp:8:module")]
    assert len(row) == 1, out.stdout
    assert re.search(r"\| \d+\.\d\d \[\d+\.\d\d-\d+\.\d\d\] \|$", row[0]), row[0]
    records = [json.loads(ln) for ln in out.stderr.splitlines() if ln.startswith("{")]
    assert sorted((r["round"], r["side"]) for r in records) == [
        (0, "after"), (0, "before"), (1, "after"), (1, "before")]
    assert all(r.get("lockstep") is True and r["samples_per_s"] > 0 for r in records), records
