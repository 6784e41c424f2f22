"""LeNet training step through the Module API (the anchors' LeNet workload).

conv 5x5x20 tanh maxpool2 -> conv 5x5x50 tanh maxpool2 -> FC500 tanh -> FC10 -> SoftmaxOutput,
batch 64 of 1x28x28, SGD with momentum. Times forward_backward + update over ~0.4 s windows and
prints the median ms/step over 7 windows. Run with 2 threads, e.g.

    OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 python benchmarks/lenet_step.py [--profile]

--profile adds the time each op's forward and backward took (ms per step, median of windows).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "2")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import minimod as mx  # noqa: E402


def lenet():
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(5, 5), num_filter=20)
    net = mx.sym.Activation(net, act_type="tanh")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2))
    net = mx.sym.Convolution(net, kernel=(5, 5), num_filter=50)
    net = mx.sym.Activation(net, act_type="tanh")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2))
    net = mx.sym.Flatten(net)
    net = mx.sym.FullyConnected(net, num_hidden=500)
    net = mx.sym.Activation(net, act_type="tanh")
    net = mx.sym.FullyConnected(net, num_hidden=10)
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _wrap_ops(totals):
    """Time every op's forward and backward into totals["<Op>#<k>[_backward]"].

    Patches the op classes before binding (the executor captures the bound methods then);
    instance k of a class is the k-th one seen running.
    """
    from minimod.ops.registry import list_ops
    instances: dict = {}
    for cls in set(list_ops().values()):
        for kind in ("forward", "backward"):
            fn = cls.__dict__.get(kind)
            if fn is None:
                continue

            def timed(self, *args, _fn=fn, _kind=kind, **kw):
                key = instances.setdefault(id(self), "%s#%d" % (self.name, sum(
                    v.startswith(self.name + "#") for v in instances.values())))
                t0 = time.perf_counter()
                r = _fn(self, *args, **kw)
                key += "" if _kind == "forward" else "_backward"
                totals[key] = totals.get(key, 0.0) + time.perf_counter() - t0
                return r
            setattr(cls, kind, timed)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--windows", type=int, default=7)
    ap.add_argument("--window-s", type=float, default=0.4)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()

    rs = np.random.RandomState(0)
    batches = [mx.io.DataBatch([mx.nd.array(rs.rand(args.batch, 1, 28, 28).astype(np.float32))],
                               [mx.nd.array(rs.randint(0, 10, args.batch).astype(np.float32))])
               for _ in range(8)]
    totals: dict = {}
    if args.profile:
        _wrap_ops(totals)
    mod = mx.mod.Module(lenet(), context=mx.cpu())
    mod.bind(data_shapes=[("data", (args.batch, 1, 28, 28))],
             label_shapes=[("softmax_label", (args.batch,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd",
                       optimizer_params={"learning_rate": 0.01, "momentum": 0.9})

    def step(i):
        mod.forward_backward(batches[i % len(batches)])
        mod.update()

    for i in range(10):
        step(i)
    mod.get_outputs()[0].asnumpy()
    times, profiles = [], []
    i = 0
    for _ in range(args.windows):
        totals.clear()
        t0 = time.perf_counter()
        n = 0
        while True:
            step(i)
            i += 1
            n += 1
            if time.perf_counter() - t0 >= args.window_s:
                break
        mod.get_outputs()[0].asnumpy()
        times.append((time.perf_counter() - t0) / n * 1e3)
        profiles.append({k: v / n * 1e3 for k, v in totals.items()})
    print("lenet b%d: median %.2f ms/step (windows: %s)"
          % (args.batch, float(np.median(times)), " ".join("%.1f" % t for t in times)))
    if args.profile and profiles[0]:
        rows = sorted(((float(np.median([p.get(k, 0.0) for p in profiles])), k)
                       for k in profiles[0]), reverse=True)
        for ms, key in rows:
            print("  %-28s %7.2f ms" % (key, ms))


if __name__ == "__main__":
    main()
