"""The layout pass on and off, in one process: `python3 benchmarks/layout_ab.py [--net mlp]`.

Two executors of the same symbol, one compiled with the layout pass (minimod.passes.layouts)
and one without, run forward + backward (or, with `--infer`, inference forward passes) in
alternating windows; prints the median [min-max] of the per-pair speed-ups.
`--no-pass-through` keeps Activation and Flatten out of the pass (only the edges between the
ops that compute batch-last go batch-last), to see what the pass-through adds.
The nets: `vgg` (default), conv 16 - relu - conv 16 - relu - 2x2 max pool, conv 32 - relu -
conv 32 - relu - 2x2 max pool, fc 10, softmax on 3x32x32 inputs; `mlp`, the benchmark's
784-512-512-10 relu MLP (workloads.py).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import benchutil  # noqa: F401  (pins the thread pools before numpy is imported)
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import workloads  # noqa: E402

import minimod as mx  # noqa: E402
from minimod.passes import layout as layout_pass  # noqa: E402
from minimod.passes import layouts  # noqa: E402


def vgg(mx):
    net = mx.sym.Variable("data")
    for block, filters in enumerate((16, 32)):
        for i in range(2):
            net = mx.sym.Convolution(net, kernel=(3, 3), pad=(1, 1), num_filter=filters,
                                     name="conv%d_%d" % (block, i))
            net = mx.sym.Activation(net, act_type="relu", name="relu%d_%d" % (block, i))
        net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2),
                             name="pool%d" % block)
    net = mx.sym.FullyConnected(mx.sym.Flatten(net), num_hidden=10, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def bound(sym, data_shape: tuple, on: bool, train: bool):
    with layouts(on):
        exe = sym.simple_bind(mx.cpu(), data=data_shape, softmax_label=data_shape[:1],
                              grad_req="write" if train else "null")
    batch = data_shape[0]
    rng = np.random.RandomState(0)
    for name, arr in exe.arg_dict.items():
        arr[:] = (rng.randn(*arr.shape) * 0.1).astype(np.float32)
    exe.arg_dict["softmax_label"][:] = np.arange(batch) % 10
    return exe


def window(exe, steps: int, train: bool) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        exe.forward(is_train=train)
        if train:
            exe.backward()
    return (time.perf_counter() - start) / steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--net", choices=("vgg", "mlp"), default="vgg")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--infer", action="store_true", help="inference forward passes only")
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--steps", type=int, default=10, help="steps per timing window")
    parser.add_argument("--no-pass-through", action="store_true")
    args = parser.parse_args()
    if args.no_pass_through:
        layout_pass._TRANSPARENT = ()
    train = not args.infer
    if args.net == "vgg":
        sym, data_shape, label = vgg(mx), (args.batch, 3, 32, 32), "VGG-style"
    else:
        sym, data_shape, label = workloads.symbol(mx, "mlp"), (args.batch, 784), "MLP"
    exes = {on: bound(sym, data_shape, on, train) for on in (True, False)}
    for exe in exes.values():
        window(exe, 3, train)  # warm-up: the scratch cache and the pages of every buffer
    ratios, with_pass = [], []
    for pair in range(args.pairs):
        order = (True, False) if pair % 2 == 0 else (False, True)
        took = {on: window(exes[on], args.steps, train) for on in order}
        ratios.append(took[False] / took[True])
        with_pass.append(took[True])
    print("%s b%d, %s: %.2f [%.2f-%.2f]x as fast with the layout pass "
          "(%s), %.2f ms a step with it" % (
              label, args.batch, "forward + backward" if train else "inference",
              statistics.median(ratios), min(ratios), max(ratios),
              "no Activation pass-through" if args.no_pass_through else "as shipped",
              1e3 * statistics.median(with_pass)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
