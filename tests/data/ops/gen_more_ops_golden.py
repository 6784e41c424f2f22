"""Write more_ops_golden.npz: MXNet 1.9.1's numbers for cumsum, khatri_rao,
IdentityAttachKLSparseReg and the deterministic parts of sample_multinomial.

Needs an MXNet 1.9.1 environment (the tests only read the .npz):
    OMP_NUM_THREADS=1 /tmp/mxenv/bin/python tests/data/ops/gen_more_ops_golden.py
Per case `<name>/...`: `meta` (JSON: op, attrs, input names), `in<i>` the inputs, `out<j>` the
outputs, `head<j>` the head gradients, `grad<i>` the input gradients, and for the KL
regulariser `aux_init` and `aux` (moving_avg after each of two steps, stacked).
"""
import json
import os

import mxnet as mx
import numpy as np

rng = np.random.RandomState(7)
out = {}


def run(name, op, attrs, inputs, with_grad=True, aux=None, steps=1):
    names = ["x%d" % i for i in range(len(inputs))]
    sym = getattr(mx.sym, op)(*[mx.sym.Variable(n) for n in names], name="op", **attrs)
    req = "write" if with_grad else "null"
    exe = sym.simple_bind(mx.cpu(), grad_req=req, type_dict={n: a.dtype for n, a in
                                                               zip(names, inputs)},
                          **{n: a.shape for n, a in zip(names, inputs)})
    for n, a in zip(names, inputs):
        exe.arg_dict[n][:] = a
    if aux is not None:
        exe.aux_dict["op_moving_avg"][:] = aux
        out[name + "/aux_init"] = aux
    auxes = []
    for _ in range(steps):
        outs = exe.forward(is_train=True)
        heads = [rng.uniform(-1, 1, o.shape).astype(o.dtype) for o in outs]
        if with_grad:
            exe.backward([mx.nd.array(h, dtype=h.dtype) for h in heads])
        if aux is not None:
            # MXNet's engine does not order a read of moving_avg after the backward that
            # writes it (the kernel updates it in place unannounced): wait for it
            mx.nd.waitall()
            auxes.append(exe.aux_dict["op_moving_avg"].asnumpy())
    out[name + "/meta"] = np.array(json.dumps(dict(op=op, attrs=attrs, steps=steps)))
    for i, a in enumerate(inputs):
        out["%s/in%d" % (name, i)] = a
    for j, (o, h) in enumerate(zip(outs, heads)):
        out["%s/out%d" % (name, j)] = o.asnumpy()
        out["%s/head%d" % (name, j)] = h
    if with_grad:
        for i, n in enumerate(names):
            out["%s/grad%d" % (name, i)] = exe.grad_dict[n].asnumpy()
    if auxes:
        out[name + "/aux"] = np.stack(auxes)


x = rng.randn(3, 4, 5).astype("float32")
run("cumsum_flat", "cumsum", {}, [x])
run("cumsum_axis0", "cumsum", {"axis": 0}, [x])
run("cumsum_axis2", "cumsum", {"axis": 2}, [x])
run("cumsum_float64", "cumsum", {"axis": 1, "dtype": "float64"}, [x])
run("cumsum_int32", "cumsum", {"axis": 1}, [rng.randint(-9, 9, (2, 6)).astype("int32")],
    with_grad=False)
a, b, c = (rng.randn(n, 3).astype("float32") for n in (2, 4, 3))
run("khatri_rao_two", "khatri_rao", {}, [a, b], with_grad=False)
run("khatri_rao_three", "khatri_rao", {}, [a, b, c], with_grad=False)
run("khatri_rao_one", "khatri_rao", {}, [c], with_grad=False)
act = rng.uniform(0.05, 0.95, (6, 4)).astype("float32")
run("kl_sparse", "IdentityAttachKLSparseReg",
    {"sparseness_target": 0.2, "penalty": 0.5, "momentum": 0.8}, [act],
    aux=np.array([0.3, 0.5, 0.1, 0.7], "float32"), steps=2)
run("kl_sparse_defaults", "IdentityAttachKLSparseReg", {}, [act],
    aux=np.array([0.2, 0.05, 0.6, 0.9], "float32"))
# rows with one class of positive probability, a row whose running sum passes 1 at once
# (unnormalised: the first class always), and the log-probabilities' gradient
sure = np.array([[0, 0, 1, 0], [1, 0, 0, 0], [2, 2, 0, 0], [0, 0.5, 0.5, 0]], "float32")
sure[3] = [0, 1, 0, 0]
run("multinomial_sure", "sample_multinomial", {"shape": (3,), "get_prob": True}, [sure])
run("multinomial_float_dtype", "sample_multinomial", {"dtype": "float32"}, [sure],
    with_grad=False)

np.savez_compressed(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                 "more_ops_golden.npz"), **out)
print("wrote %d arrays" % len(out))
