"""Training a large embedding table with `sparse_grad=True`: minimod against MXNet 1.9.1 and
PyTorch, same machine.

    python benchmarks/bench_sparse_grad.py [--mxnet-python /tmp/mxenv/bin/python]
                                           [--torch-python /tmp/ptenv/bin/python]
                                           [--rounds 5] [--steps 40]

The net: Embedding(50,000 x 128) over 35 tokens, their mean, FullyConnected 256 + ReLU,
FullyConnected 10 + softmax, batch 64, SGD with momentum 0.9 and weight decay 1e-4, through
Module (forward, backward, update). With `sparse_grad=True` MXNet and minimod update only the
table rows a batch looks up (at most 2,240 of 50,000; `minimod/module/sparse_grads.py`); both
are timed with it on and off. PyTorch's SGD cannot step a sparse gradient with momentum or
weight decay, so its peer is `nn.Embedding(sparse=False)` with the same optimizer (what a
PyTorch user runs for this recipe). Each round runs every library in a fresh process, one
after the other; a round's figure is its median step time (after `waitall`, MXNet's steps
being asynchronous). Prints the per-round times and the medians. By hand, never in CI.
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
sparse, steps = sys.argv[2] == "1", int(sys.argv[3])
data = mx.sym.var("data")
emb = mx.sym.Embedding(data, input_dim=50000, output_dim=128, sparse_grad=sparse, name="emb")
h = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.mean(emb, axis=1), num_hidden=256,
                                            name="fc1"), act_type="relu")
net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=10, name="fc2"), name="softmax")
mod = mx.mod.Module(net)
mod.bind(data_shapes=[("data", (64, 35))], label_shapes=[("softmax_label", (64,))])
mod.init_params(mx.init.Uniform(0.05))
mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9,
                                                      "wd": 1e-4})
rs = np.random.RandomState(0)
batches = [mx.io.DataBatch([mx.nd.array(rs.randint(0, 50000, (64, 35)))],
                           [mx.nd.array(rs.randint(0, 10, 64))]) for _ in range(8)]
count = [0]

def step():
    mod.forward(batches[count[0] % 8], is_train=True)
    mod.backward()
    mod.update()
    mx.nd.waitall()
    count[0] += 1
"""

TORCH_STEP = r"""
import json, sys, time
import numpy as np
import torch
torch.set_num_threads(int(sys.argv[4]))
steps = int(sys.argv[3])
emb = torch.nn.Embedding(50000, 128, sparse=False)
fc1, fc2 = torch.nn.Linear(128, 256), torch.nn.Linear(256, 10)
params = list(emb.parameters()) + list(fc1.parameters()) + list(fc2.parameters())
opt = torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-4)
rs = np.random.RandomState(0)
batches = [(torch.tensor(rs.randint(0, 50000, (64, 35))), torch.tensor(rs.randint(0, 10, 64)))
           for _ in range(8)]
count = [0]

def step():
    x, y = batches[count[0] % 8]
    opt.zero_grad()
    out = fc2(torch.relu(fc1(emb(x).mean(dim=1))))
    torch.nn.functional.cross_entropy(out, y).backward()
    opt.step()
    count[0] += 1
"""

def one_round(python: str, engine: str, sparse: bool, steps: int, threads: int) -> float:
    code, last = (TORCH_STEP, threads) if engine == "torch" else (MX_STEP, ROOT)
    return fresh_rounds.one_round(python, code, [engine, int(sparse), steps, last], threads)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mxnet-python", default="/tmp/mxenv/bin/python")
    p.add_argument("--torch-python", default="/tmp/ptenv/bin/python")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    runs = (("minimod sparse_grad", sys.executable, "minimod", True),
            ("MXNet sparse_grad", args.mxnet_python, "mxnet", True),
            ("minimod dense", sys.executable, "minimod", False),
            ("MXNet dense", args.mxnet_python, "mxnet", False),
            ("PyTorch dense", args.torch_python, "torch", False))
    ms = {label: [] for label, *_ in runs}
    for r in range(args.rounds):
        for label, python, engine, sparse in runs:
            ms[label].append(one_round(python, engine, sparse, args.steps, args.threads))
        print("round %d: %s" % (r + 1, ", ".join("%s %.2f ms" % (k, v[-1])
                                                 for k, v in ms.items())),
              file=sys.stderr, flush=True)
    print("| run | ms/step (median of %d rounds) | minimod sparse_grad speed x this |\n"
          "|---|---|---|" % args.rounds)
    base = ms["minimod sparse_grad"]
    for label, times in ms.items():
        ratio = [b / a for a, b in zip(base, times)]
        print("| %s | %.2f | %.2f [%.2f-%.2f] |" % (label, statistics.median(times),
                                                    statistics.median(ratio), min(ratio),
                                                    max(ratio)))


if __name__ == "__main__":
    main()
