"""Imperative training with autograd: minimod against MXNet 1.9.1 and PyTorch, same machine.

    python benchmarks/bench_autograd.py [--mxnet-python /tmp/mxenv/bin/python]
                                        [--torch-python /tmp/ptenv/bin/python]
                                        [--batches 32,128] [--rounds 5] [--steps 50]

The step is the MLP of the main benchmarks (784-512-512-10, ReLU) written imperatively, as a
custom training loop is: under `autograd.record()` three `FullyConnected` calls, the mean
negative log-softmax of the labels, `backward()`, then `sgd_mom_update` per parameter
(lr 0.01, momentum 0.9); PyTorch runs the same with `F.linear`, `F.cross_entropy` and
`optim.SGD`. Each round runs every library in a fresh process, one after the other (the same
seconds of the machine), timing `--steps` steps after 5 warm-up steps; a round's figure is its
median step time. Prints the per-round ratios and their medians. By hand, never in CI.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

import fresh_rounds

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

MX_STEP = fresh_rounds.MX_IMPORT + r"""
batch, steps = int(sys.argv[2]), int(sys.argv[3])
rs = np.random.RandomState(0)
x = mx.nd.array(rs.uniform(-1, 1, (batch, 784)))
label = mx.nd.array(rs.randint(0, 10, batch))
shapes = [(512, 784), (512,), (512, 512), (512,), (10, 512), (10,)]
params = [mx.nd.array(rs.normal(0, 0.01, s)) for s in shapes]
moms = [mx.nd.zeros(s) for s in shapes]
for p in params:
    p.attach_grad()

def step():
    with mx.autograd.record():
        h = mx.nd.relu(mx.nd.FullyConnected(x, params[0], params[1], num_hidden=512))
        h = mx.nd.relu(mx.nd.FullyConnected(h, params[2], params[3], num_hidden=512))
        out = mx.nd.FullyConnected(h, params[4], params[5], num_hidden=10)
        loss = -mx.nd.pick(mx.nd.log_softmax(out), label).mean()
    loss.backward()
    for p, m in zip(params, moms):
        mx.nd.sgd_mom_update(p, p.grad, m, lr=0.01, momentum=0.9, out=p)
    return loss.asscalar()

"""

TORCH_STEP = r"""
import json, sys, time
import numpy as np
import torch
import torch.nn.functional as F
torch.set_num_threads(int(sys.argv[4]))
batch, steps = int(sys.argv[2]), int(sys.argv[3])
rs = np.random.RandomState(0)
x = torch.tensor(rs.uniform(-1, 1, (batch, 784)), dtype=torch.float32)
label = torch.tensor(rs.randint(0, 10, batch))
shapes = [(512, 784), (512,), (512, 512), (512,), (10, 512), (10,)]
params = [torch.tensor(rs.normal(0, 0.01, s), dtype=torch.float32, requires_grad=True)
          for s in shapes]
opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)

def step():
    opt.zero_grad()
    h = F.relu(F.linear(x, params[0], params[1]))
    h = F.relu(F.linear(h, params[2], params[3]))
    loss = F.cross_entropy(F.linear(h, params[4], params[5]), label)
    loss.backward()
    opt.step()
    return loss.item()

"""


def one_round(python: str, engine: str, batch: int, steps: int, threads: int) -> float:
    code, last = (TORCH_STEP, threads) if engine == "torch" else (MX_STEP, ROOT)
    return fresh_rounds.one_round(python, code, [engine, batch, steps, last], threads)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mxnet-python", default="/tmp/mxenv/bin/python")
    p.add_argument("--torch-python", default="/tmp/ptenv/bin/python")
    p.add_argument("--batches", default="32,128")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    engines = (("minimod", sys.executable), ("mxnet", args.mxnet_python),
               ("torch", args.torch_python))
    print("| batch | minimod ms/step | MXNet ms/step | PyTorch ms/step | minimod / MXNet "
          "(speed) | minimod / PyTorch (speed) |\n|---|---|---|---|---|---|")
    for batch in (int(b) for b in args.batches.split(",")):
        ms = {engine: [] for engine, _ in engines}
        for r in range(args.rounds):
            for engine, python in engines:
                ms[engine].append(one_round(python, engine, batch, args.steps, args.threads))
            print("batch %d round %d: %s" % (batch, r + 1, ", ".join(
                "%s %.2f ms" % (e, ms[e][-1]) for e, _ in engines)), file=sys.stderr,
                flush=True)
        vs_mx = [b / a for a, b in zip(ms["minimod"], ms["mxnet"])]
        vs_torch = [b / a for a, b in zip(ms["minimod"], ms["torch"])]
        print("| %d | %.2f | %.2f | %.2f | %.2f [%.2f-%.2f] | %.2f [%.2f-%.2f] |" % (
            batch, statistics.median(ms["minimod"]), statistics.median(ms["mxnet"]),
            statistics.median(ms["torch"]), statistics.median(vs_mx), min(vs_mx), max(vs_mx),
            statistics.median(vs_torch), min(vs_torch), max(vs_torch)), flush=True)


if __name__ == "__main__":
    main()
