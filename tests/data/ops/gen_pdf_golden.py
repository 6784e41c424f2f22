"""Write pdf_golden.npz: MXNet 1.9.1's random_pdf_* operators (densities and log-densities of
samples under per-row distribution parameters) and their gradients.

Needs an MXNet 1.9.1 environment (the tests only read the .npz):
    OMP_NUM_THREADS=1 /tmp/mxenv/bin/python tests/data/ops/gen_pdf_golden.py
Per case `<name>/...`: `meta` (JSON: op, attrs, input names), `in<i>`, `out`, `head` and
`grad<i>` (the gradient of sum(head * out) with respect to input i).
"""
import json
import os

import mxnet as mx
import numpy as np

rng = np.random.RandomState(11)
out = {}


def run(name, op, inputs, names, **attrs):
    sym = getattr(mx.sym, op)(*[mx.sym.Variable(n) for n in names], name="op", **attrs)
    exe = sym.simple_bind(mx.cpu(), **{n: a.shape for n, a in zip(names, inputs)})
    for n, a in zip(names, inputs):
        exe.arg_dict[n][:] = a
    y = exe.forward(is_train=True)[0]
    head = rng.uniform(-1, 1, y.shape).astype("float32")
    exe.backward([mx.nd.array(head)])
    out[name + "/meta"] = np.array(json.dumps(dict(op=op, attrs=attrs, names=names)))
    for i, a in enumerate(inputs):
        out["%s/in%d" % (name, i)] = a
        out["%s/grad%d" % (name, i)] = exe.grad_dict[names[i]].asnumpy()
    out[name + "/out"] = y.asnumpy()
    out[name + "/head"] = head


def f32(a):
    return np.asarray(a, dtype="float32")


P = (2,)
for is_log in (False, True):
    tag = "_log" if is_log else ""
    run("uniform" + tag, "random_pdf_uniform",
        [f32([[0.2, 1.5, -0.5, 2.5], [0.0, 0.7, 3.0, -1.0]]), f32([0.0, -1.0]), f32([2.0, 3.0])],
        ["sample", "low", "high"], is_log=is_log)
    run("normal" + tag, "random_pdf_normal",
        [f32(rng.randn(2, 3)), f32([0.3, -1.0]), f32([0.8, 1.7])], ["sample", "mu", "sigma"],
        is_log=is_log)
    run("gamma" + tag, "random_pdf_gamma",
        [f32(rng.uniform(0.2, 3, (2, 3))), f32([0.7, 2.5]), f32([1.3, 0.6])],
        ["sample", "alpha", "beta"], is_log=is_log)
    run("exponential" + tag, "random_pdf_exponential",
        [f32(rng.uniform(0.1, 3, (2, 3))), f32([0.5, 2.0])], ["sample", "lam"], is_log=is_log)
    run("poisson" + tag, "random_pdf_poisson",
        [f32([[0, 1, 3], [2, 5, 0]]), f32([1.5, 3.2])], ["sample", "lam"], is_log=is_log)
    run("negative_binomial" + tag, "random_pdf_negative_binomial",
        [f32([[0, 1, 3], [2, 5, 0]]), f32([2.0, 4.0]), f32([0.3, 0.6])], ["sample", "k", "p"],
        is_log=is_log)
    run("generalized_negative_binomial" + tag, "random_pdf_generalized_negative_binomial",
        [f32([[0, 1, 3], [2, 5, 0]]), f32([1.5, 4.0]), f32([0.3, 0.8])],
        ["sample", "mu", "alpha"], is_log=is_log)
    d = rng.uniform(0.1, 1, (2, 3, 4))
    run("dirichlet" + tag, "random_pdf_dirichlet",
        [f32(d / d.sum(-1, keepdims=True)), f32(rng.uniform(0.5, 3, (2, 4)))],
        ["sample", "alpha"], is_log=is_log)
run("normal_2d_params", "random_pdf_normal",
    [f32(rng.randn(2, 2, 3)), f32([[0.1, 0.2], [0.3, 0.4]]), f32([[1.0, 2.0], [0.5, 1.5]])],
    ["sample", "mu", "sigma"])

np.savez_compressed(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                 "pdf_golden.npz"), **out)
print("wrote %d arrays" % len(out))
