"""minimod through the Module API: `python3 bench_minimod.py --net mlp --batch 128 [--mode fit]`.

Runs the same workload text as bench_mxnet.py (workloads.py) with `import minimod as mx`, from
this checkout (the repo root goes first on sys.path). Prints one JSON line.
"""
import os
import sys

import benchutil  # noqa: F401  (pins the thread pools before numpy is imported)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import workloads  # noqa: E402

import minimod as mx  # noqa: E402

if __name__ == "__main__":
    workloads.main(mx, "minimod")
