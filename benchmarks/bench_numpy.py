"""The hand-written NumPy peer: `python3 bench_numpy.py --net mlp|lenet|lstm_fused [--batch N]`.

Times handwritten.py's training steps (same model, batches and SGD-momentum update as the
Module peers, preallocated buffers, no framework) with the same windows as the other peers and
prints one JSON line. It is the floor of each workload's arithmetic over NumPy and its BLAS:
an engine built on NumPy runs these calls plus its own overhead, so where this peer's ratio to
MXNet is below an issue-5 target, no NumPy engine doing that arithmetic reaches the target.
`lstm_fused` is the fused RNN's arithmetic (one input GEMM for all steps, one recurrent GEMM a
step); the unrolled graph has no hand-written counterpart. Training steps only (`--mode module`).
"""
import sys

import benchutil  # isort: skip  (pins the thread pools before numpy is imported)
import handwritten
import numpy as np
import workloads


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="hand-written NumPy training-step benchmark")
    benchutil.add_common_args(parser)
    args = parser.parse_args()
    args.batch = args.batch or benchutil.default_batch(args.net)
    if args.mode != "module" or args.net not in ("mlp", "lenet", "lstm_fused"):
        sys.exit("bench_numpy: only training steps (--mode module) of mlp, lenet and "
                 "lstm_fused have a hand-written step")
    kind = "lstm" if args.net.startswith("lstm") else args.net
    model = handwritten.MODELS[kind](args.batch)
    model.want_loss = False  # the other peers compute no loss either
    batches = workloads.numpy_batches(args.net, args.batch)
    if kind != "lstm":  # class labels as integers once, as a data loader would hand them over
        batches = [(x, y.astype(np.int64)) for x, y in batches]
    state = {"i": 0}

    def step():
        x, y = batches[state["i"] % len(batches)]
        state["i"] += 1
        model.step(x, y)

    timer = benchutil.timer_from_args(args, lambda: None, args.batch)
    result = benchutil.measure(step, timer)
    benchutil.emit("numpy", args, result, version=np.__version__, numpy=np.__version__)


if __name__ == "__main__":
    main()
