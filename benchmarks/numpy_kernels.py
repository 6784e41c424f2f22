"""What NumPy's own kernels cost at the benchmark's sizes: the figures that bound an engine
built on NumPy (RESULTS.md's notes cite them).

    python3 benchmarks/numpy_kernels.py          (prints a Markdown section; about a minute)

1. float32 elementwise kernels per element, out= preallocated, at LeNet conv1's activation
   size (64 x 20 x 24 x 24) and the LSTM decoder's softmax size (1120 x 2000): the
   transcendental functions against a multiply, which runs at memory speed; and, when
   MXNET_PY names an interpreter with MXNet 1.9.1 (run.py sets it), the same kernels as
   MXNet's NDArray ops (`Activation` tanh, `exp`, `elemwise_mul`) on its 2 OpenMP threads.
2. A float32 `tanh` split over two Python threads (NumPy releases the GIL in its loops), alone
   and right after a GEMM: OpenBLAS's worker thread keeps spinning on the second core for a
   while after each GEMM, which is where an engine's elementwise work runs.
3. The MLP's SGD-momentum update (670k float32 parameters, four passes in MXNet's rounding
   order), with a whole-buffer scratch and with minimod's block-by-block one, back to back and
   right after the MLP's GEMMs have run.
Every figure is the median over repeated timings in this one process; the machine's speed
changes for minutes at a time, so compare rows with each other, not with other runs.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import benchutil  # noqa: F401  # isort: skip  (threads and BLAS kernels, before numpy)
import numpy as np


def median_ms(fn, reps: int = 25, before=None) -> float:
    """Median ms of fn() over `reps` calls, each preceded by before() (untimed) if given."""
    fn()
    times = []
    for _ in range(reps):
        if before is not None:
            before()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


SHAPES = (("LeNet conv1 output", (64, 20, 24, 24)), ("LSTM decoder logits", (1120, 2000)))
KERNELS = ("multiply", "tanh", "exp")

# Run by MXNet's interpreter: the same kernels as MXNet NDArray ops, one JSON line of ms.
_MXNET_PROBE = """
import json, statistics, sys, time
import mxnet as mx, numpy as np
shapes, reps = json.loads(sys.argv[1]), 25
res = {}
for shape in shapes:
    x = mx.nd.array(np.random.default_rng(0).uniform(-3, 3, shape).astype(np.float32))
    out = mx.nd.empty(x.shape)
    ops = {"multiply": lambda: mx.nd.elemwise_mul(x, x, out=out),
           "tanh": lambda: mx.nd.Activation(x, act_type="tanh", out=out),
           "exp": lambda: mx.nd.exp(x, out=out)}
    for name, op in ops.items():
        op(); mx.nd.waitall()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter(); op(); mx.nd.waitall()
            times.append(time.perf_counter() - t0)
        res["%s %s" % (shape, name)] = statistics.median(times) * 1e3
print(json.dumps(res))
"""


def mxnet_ms() -> dict:
    """{'[shape] kernel': ms} from MXNet 1.9.1 under MXNET_PY, or {} without it."""
    python = os.environ.get("MXNET_PY", "")
    if not os.path.exists(python):
        return {}
    proc = subprocess.run([python, "-c", _MXNET_PROBE,
                           json.dumps([list(shape) for _, shape in SHAPES])],
                          capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]) if proc.returncode == 0 and lines else {}


def elementwise_rows(rng) -> list:
    mx_ms = mxnet_ms()
    rows = []
    for label, shape in SHAPES:
        x = rng.uniform(-3, 3, shape).astype(np.float32)
        out = np.empty_like(x)
        fns = {"multiply": lambda: np.multiply(x, x, out=out),
               "tanh": lambda: np.tanh(x, out=out),
               "exp": lambda: np.exp(x, out=out)}
        base = median_ms(fns["multiply"])
        for name in KERNELS:
            ms = base if name == "multiply" else median_ms(fns[name])
            theirs = mx_ms.get("%s %s" % (list(shape), name))
            rows.append("| %s %s | %s | %.3f | %.2f | %.1f | %s |" % (
                label, "x".join(map(str, shape)), name, ms, ms * 1e6 / x.size, ms / base,
                "%.3f" % theirs if theirs is not None else "-"))
    return rows


def threaded_tanh_rows(rng) -> list:
    x = rng.uniform(-3, 3, 64 * 20 * 24 * 24).astype(np.float32)
    out = np.empty_like(x)
    half = x.size // 2
    pool = ThreadPoolExecutor(1)

    def one_thread():
        np.tanh(x, out=out)

    def two_threads():
        other = pool.submit(np.tanh, x[:half], out=out[:half])
        np.tanh(x[half:], out=out[half:])
        other.result()

    a = rng.standard_normal((500, 4096)).astype(np.float32)   # conv2's forward GEMM, b64
    w = rng.standard_normal((50, 500)).astype(np.float32)
    c = np.empty((50, 4096), np.float32)

    def gemm():
        np.matmul(w, a, out=c)

    rows = []
    for when, before in (("alone", None), ("right after a GEMM", gemm)):
        one = median_ms(one_thread, before=before)
        two = median_ms(two_threads, before=before)
        rows.append("| %s | %.3f | %.3f | %.2f |" % (when, one, two, one / two))
    pool.shutdown()
    return rows


def update_rows(rng) -> list:
    dims = [784, 512, 512, 10]
    n = sum(i * o + o for i, o in zip(dims, dims[1:]))
    w, m = np.zeros(n, np.float32), np.zeros(n, np.float32)
    g = rng.standard_normal(n).astype(np.float32)
    tmp = np.empty_like(g)
    lr_rescale, mu = np.float32(0.01 / 128), np.float32(0.9)

    def update():
        np.multiply(g, lr_rescale, out=tmp)
        m.__imul__(mu)
        np.subtract(m, tmp, out=m)
        np.add(w, m, out=w)

    block = 32768  # minimod's SGD (optimizer._SGD_BLOCK): the step through a small scratch
    small = np.empty(block, np.float32)
    spans = [(g[i:i + block], m[i:i + block], small[:min(block, n - i)])
             for i in range(0, n, block)]

    def update_blocked():
        m.__imul__(mu)
        for g_, m_, t in spans:
            np.multiply(g_, lr_rescale, out=t)
            np.subtract(m_, t, out=m_)
        np.add(w, m, out=w)

    x = rng.standard_normal((128, 784)).astype(np.float32)
    mats = [rng.standard_normal((o, i)).astype(np.float32) for i, o in zip(dims, dims[1:])]
    acts = [np.empty((128, o), np.float32) for o in dims[1:]]
    d_out = [rng.standard_normal((128, o)).astype(np.float32) for o in dims[1:]]
    d_in = [np.empty((128, i), np.float32) for i in dims[1:-1]]
    grads = [np.empty_like(k) for k in mats]

    def mlp_gemms():  # the step's 8 GEMMs: 3 forward, 3 weight gradients, 2 data gradients
        inp = x
        for k, a in zip(mats, acts):
            np.matmul(inp, k.T, out=a)
            inp = a
        for gk, d, a_in in zip(grads, d_out, [x] + acts[:-1]):
            np.matmul(d.T, a_in, out=gk)
        for k, d, o in zip(mats[1:], d_out[1:], d_in):
            np.matmul(d, k, out=o)

    traffic = 10 * n * 4  # bytes: the four passes read 6 whole arrays and write 4
    rows = []
    for label, fn in (("whole-buffer scratch", update),
                      ("32k-element block scratch (minimod's SGD)", update_blocked)):
        alone = median_ms(fn)
        in_step = median_ms(fn, before=mlp_gemms)
        rows.append("| %s | %.3f (%.1f GB/s) | %.3f (%.1f GB/s) |" % (
            label, alone, traffic / alone / 1e6, in_step, traffic / in_step / 1e6))
    return rows


def main() -> int:
    rng = np.random.default_rng(0)
    out = ["## NumPy's kernels at the benchmark's sizes", "",
           "`benchmarks/numpy_kernels.py` (one process, medians of 25 calls; float32, out= "
           "preallocated).", "",
           "| array | kernel | NumPy ms per call | NumPy ns per element | x multiply "
           "| MXNet ms per call |",
           "|---|---|---|---|---|---|"]
    out += elementwise_rows(rng)
    out += ["", "float32 `tanh` of LeNet conv1's output in one thread and split over two "
            "Python threads:", "",
            "| when | 1 thread ms | 2 threads ms | speed-up |", "|---|---|---|---|"]
    out += threaded_tanh_rows(rng)
    out += ["", "The MLP's SGD-momentum update over 670k float32 parameters in MXNet's order "
            "(`lr * rescale * g` into a scratch, `m *= mu`, `m -= scratch`, `w += m`), with a "
            "scratch the size of the parameters or block by block through a small one; GB/s "
            "counts the 10 whole-array reads and writes of the four passes:", "",
            "| scratch | back to back, ms | right after the MLP's GEMMs, ms |", "|---|---|---|"]
    out += update_rows(rng)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
