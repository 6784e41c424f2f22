"""The fresh-process rounds of bench_autograd.py and bench_sparse_grad.py: a step script run
in a new interpreter per library per round, timed the same way in each.

A step script defines `step()` and reads `steps` from its argv; `TIMING`, appended to it,
runs 5 warm-up steps and prints the median time of `steps` more as JSON. The scripts run by
MXNet or minimod start with `MX_IMPORT`.
"""
from __future__ import annotations

import json
import os
import subprocess

#: the opening of a step script that MXNet or minimod runs: argv[1] names the library, and
#: argv[4] is minimod's checkout
MX_IMPORT = r"""
import json, sys, time
import numpy as np
if sys.argv[1] == "mxnet":
    import mxnet as mx
else:
    sys.path.insert(0, sys.argv[4])
    import minimod as mx
"""

TIMING = r"""
for _ in range(5):
    step()
times = []
for _ in range(steps):
    start = time.perf_counter()
    step()
    times.append(time.perf_counter() - start)
print(json.dumps({"ms": 1000 * sorted(times)[len(times) // 2]}))
"""


def one_round(python: str, script: str, argv: list, threads: int) -> float:
    """The median step time (ms) of `script` + TIMING run by `python` with `argv`, its BLAS
    and OpenMP pools at `threads` threads."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads))
    out = subprocess.run([python, "-c", script + TIMING, *map(str, argv)], env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["ms"]
