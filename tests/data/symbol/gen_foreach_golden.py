"""Write foreach_golden.npz: MXNet 1.9.1's JSON, outputs and gradients of the foreach graphs
of foreach_cases.py (run with MXNet's Python; the tests only read the .npz):
    OMP_NUM_THREADS=1 /tmp/mxenv/bin/python tests/data/symbol/gen_foreach_golden.py
Per case `<name>/...`: `json`, `arg_<n>` (values), `out<i>`, `head<i>`, `grad_<n>` (none for
the FORWARD_ONLY cases).
"""
import os
import sys

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from foreach_cases import CASES, FORWARD_ONLY  # noqa: E402

rng = np.random.RandomState(3)
store = {}
for name, build in CASES.items():
    mx.attribute.AttrScope._subgraph_names.clear()  # every case names as if it were first
    with mx.name.NameManager():
        sym, shapes = build(mx)
    grads = name not in FORWARD_ONLY
    exe = sym.simple_bind(mx.cpu(), grad_req="write" if grads else "null", **shapes)
    for n in sym.list_arguments():
        v = rng.uniform(-1, 1, exe.arg_dict[n].shape).astype("float32")
        exe.arg_dict[n][:] = v
        store["%s/arg_%s" % (name, n)] = v
    outs = exe.forward(is_train=True)
    heads = [rng.uniform(-1, 1, o.shape).astype("float32") for o in outs]
    if grads:
        exe.backward([mx.nd.array(h) for h in heads])
    store[name + "/json"] = np.array(sym.tojson())
    for i, (o, h) in enumerate(zip(outs, heads)):
        store["%s/out%d" % (name, i)] = o.asnumpy()
        store["%s/head%d" % (name, i)] = h
    for n in sym.list_arguments() if grads else ():
        store["%s/grad_%s" % (name, n)] = exe.grad_dict[n].asnumpy()
np.savez_compressed(os.path.join(HERE, "foreach_golden.npz"), **store)
print("wrote %d cases" % len(CASES))
