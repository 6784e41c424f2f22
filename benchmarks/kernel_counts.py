"""Kernels per training step on a GPU, counted on any machine: the benchmark nets trained for
a few steps on the CuPy stand-in (tests/fake_cupy.py) with CUDA graphs on, and the operations
each captured graph recorded, summed over the step's graphs (forward and backward or the
whole step, and the optimizer's update).

Each recorded operation is one kernel launch of CuPy (an elementwise or reduction kernel, a
copy, a fill); a cuBLAS GEMM counts as one, though cuBLAS may split it. With graphs, launch
costs vanish and a small net's step time is about its kernel count times a few microseconds
of GPU time, so this count bounds what a graph replay can gain. `--fusion both` also counts
the plans without the fusion pass and the step stacking (`minimod.passes.fusion(False)`).
`--by-op` says instead where each net's kernels go: per op of the plan (a gradient node as
`_backward_<op>`), the kernels its captured steps recorded. The stand-in's cuDNN is CuPy 13's
wrapper; MINIMOD_FAKE_CUDNN=frontend counts CuPy 14's path (cuDNN's frontend, which does not
pool).

    python3 benchmarks/kernel_counts.py [--nets mlp,lenet,lstm,lstm_fused] [--fusion both]
    python3 benchmarks/kernel_counts.py --nets sdnet,w2v_nce,lstm_nce  (workloads_more.py)
    python3 benchmarks/kernel_counts.py --nets lstm --by-op
"""
from __future__ import annotations

import argparse
import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]
os.environ["MINIMOD_CUDA_GRAPHS"] = "1"

from tests import fake_cuda_graphs, fake_cupy  # noqa: E402

fake_cupy.install()  # before minimod loads: gpu(0) is the stand-in

import workloads  # noqa: E402
import workloads_more  # noqa: E402

import minimod as mx  # noqa: E402
from minimod.passes import fusion  # noqa: E402

BATCH = {"mlp": 128, "lenet": 64, "lstm": 32, "lstm_fused": 32, **workloads_more.DEFAULT_BATCH}


def _modules(mod) -> list:
    """The Modules doing `mod`'s work: itself, a BucketingModule's current one, each of a
    SequentialModule's, or the branch of workloads_more's residual module."""
    if hasattr(mod, "_modules"):
        return [m for inner in mod._modules for m in _modules(inner)]
    if hasattr(mod, "_branch"):
        return _modules(mod._branch)
    return [getattr(mod, "_curr_module", mod)]


def kernels_per_step(net: str, batch: int, fused: bool = True, steps: int = 3) -> dict:
    """{graph key: recorded operations} of one training step of `net` on the stand-in."""
    with fusion(fused):
        mod, batches = workloads.make_module(mx, net, batch, context=mx.gpu(0))
    for i in range(steps):
        mod.forward_backward(batches[i % len(batches)])
        mod.update()
    counts: dict = {}
    for inner in _modules(mod):
        for key, g in inner._exec_group.execs[0]._graphs.graphs.items():
            counts[key[0]] = counts.get(key[0], 0) + len(g.graph.thunks)
        for state in inner._updater.flat_states.values():
            for key, graph in state.graphs.graphs.items():
                counts[key[0]] = counts.get(key[0], 0) + len(graph.graph.thunks)
    return counts


def kernels_by_op(net: str, batch: int) -> collections.Counter:
    """{op name: kernels its steps recorded} over one captured training step of `net`, the
    optimizer's update as 'update'. Each recorded kernel is put down to the step the executor
    was running when the stand-in recorded it."""
    counts: collections.Counter = collections.Counter()
    record = fake_cuda_graphs.record

    def attributed(thunk):
        frame, name = sys._getframe(1), "update"
        while frame is not None:
            if frame.f_code.co_name == "_run_steps" and "step" in frame.f_locals:
                name = frame.f_locals["step"].node.op.name
                break
            frame = frame.f_back
        counts[name] += 1
        record(thunk)
    fake_cuda_graphs.record = attributed
    try:
        kernels_per_step(net, batch)
    finally:
        fake_cuda_graphs.record = record
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nets", default="mlp,lenet,lstm,lstm_fused")
    parser.add_argument("--fusion", choices=("on", "both"), default="both")
    parser.add_argument("--by-op", action="store_true",
                        help="per net, the kernels of each op instead of the totals")
    args = parser.parse_args(argv)
    if args.by_op:
        for net in args.nets.split(","):
            counts = kernels_by_op(net, BATCH[net])
            print("%s (batch %d): %d kernels" % (net, BATCH[net], sum(counts.values())))
            for name, count in counts.most_common():
                print("  %5d  %s" % (count, name))
        return 0
    print("| net | batch | kernels per step | of which: step lists + update |"
          + (" without fusion and stacking |" if args.fusion == "both" else ""))
    print("|---|---|---|---|" + ("---|" if args.fusion == "both" else ""))
    for net in args.nets.split(","):
        counts = kernels_per_step(net, BATCH[net])
        parts = " + ".join("%s %d" % item for item in sorted(counts.items()))
        row = "| %s | %d | %d | %s |" % (net, BATCH[net], sum(counts.values()), parts)
        if args.fusion == "both":
            row += " %d |" % sum(kernels_per_step(net, BATCH[net], fused=False).values())
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
