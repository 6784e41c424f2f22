"""Writes sparse_golden.npz with MXNet 1.9.1 (run with MXNet's Python, from this folder):
sparse arithmetic and products with their result storage types, and optimizer updates on
row_sparse / csr weights and gradients (two steps, the gradient's rows changing between them),
and a kvstore that sums row_sparse pushes and updates lazily.

    MXNET_STORAGE_FALLBACK_LOG_VERBOSE=0 /path/to/mxnet-venv/bin/python gen_sparse_golden.py
"""
import json

import mxnet as mx
import numpy as np

rng = np.random.RandomState(7)
out, meta = {}, {}


def dense_with_rows(shape, rows):
    x = np.zeros(shape, np.float32)
    x[rows] = rng.uniform(0.5, 1.5, size=(len(rows),) + shape[1:])
    return x


A = dense_with_rows((5, 3), [0, 3])
B = dense_with_rows((5, 3), [1, 3, 4])
C = (rng.uniform(size=(4, 6)) * (rng.uniform(size=(4, 6)) < 0.4)).astype(np.float32)
D = rng.uniform(size=(6, 3)).astype(np.float32)
E = rng.uniform(size=(4, 2)).astype(np.float32)
out.update(A=A, B=B, C=C, D=D, E=E)
a, b = mx.nd.array(A).tostype("row_sparse"), mx.nd.array(B).tostype("row_sparse")
c = mx.nd.array(C).tostype("csr")
d = mx.nd.array(D)
cases = {
    "rsp_add": a + b, "rsp_sub": a - b, "rsp_mul": a * b, "rsp_scale": a * 2.5,
    "rsp_div": a / 4.0, "rsp_neg": -a, "rsp_plus_dense": a + mx.nd.array(B),
    "rsp_times_dense": a * mx.nd.array(B), "csr_add": c + c, "csr_scale": c * 3.0,
    "csr_dot_dense": mx.nd.sparse.dot(c, d),
    "csrT_dot_dense": mx.nd.sparse.dot(c, mx.nd.array(E), transpose_a=True),
    "csr_dot_rsp": mx.nd.sparse.dot(c, mx.nd.array(D).tostype("row_sparse")),
    "retain": mx.nd.sparse.retain(b, mx.nd.array([0, 3, 4], dtype="int64")),
    "sqrt_rsp": mx.nd.sqrt(a), "rsp_plus_scalar": a + 1.0,
}
for name, value in cases.items():
    out["op_" + name] = value.asnumpy()
    meta["op_" + name] = value.stype
    if value.stype == "row_sparse":
        out["rows_" + name] = value.indices.asnumpy()

W = rng.uniform(0.5, 1.5, size=(6, 4)).astype(np.float32)
G1 = dense_with_rows((6, 4), [1, 4])
G2 = dense_with_rows((6, 4), [0, 4, 5])
out.update(W=W, G1=G1, G2=G2)
OPTS = [("sgd", {"momentum": 0.9, "wd": 0.1}), ("sgd", {"wd": 0.1}), ("sgd", {"momentum": 0.9}),
        ("sgd", {"momentum": 0.9, "wd": 0.1, "lazy_update": False}),
        ("adam", {"wd": 0.1}), ("adam", {"lazy_update": False}), ("adagrad", {}),
        ("ftrl", {"wd": 0.1}), ("rmsprop", {"wd": 0.1}), ("nag", {"momentum": 0.9, "wd": 0.1})]
for i, (name, kwargs) in enumerate(OPTS):
    for w_stype in ("default", "row_sparse"):
        opt = mx.optimizer.create(name, learning_rate=0.1, **kwargs)
        w = mx.nd.array(W).tostype(w_stype)
        state = opt.create_state_multi_precision(0, w)
        for g in (G1, G2):
            opt.update_multi_precision(0, w, mx.nd.array(g).tostype("row_sparse"), state)
        key = "opt%d_%s" % (i, w_stype)
        out[key] = w.asnumpy()
        meta[key] = [name, kwargs, w.stype]
# csr weight and gradient: MXNet's dense fallback
opt = mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9, wd=0.1)
w = mx.nd.array(C).tostype("csr")
state = opt.create_state_multi_precision(0, w)
opt.update_multi_precision(0, w, mx.nd.array(C * 0.5).tostype("csr"), state)
out["opt_csr"], meta["opt_csr"] = w.asnumpy(), w.stype

# a kvstore with an optimizer: two devices push row_sparse gradients, rows differ
kv = mx.kv.create("local")
kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9, wd=0.1))
kv.init("w", mx.nd.array(W).tostype("row_sparse"))
for g in (G1, G2):
    kv.push("w", [mx.nd.array(g).tostype("row_sparse"),
                  mx.nd.array(g[::-1].copy()).tostype("row_sparse")])
pulled = mx.nd.zeros(W.shape)
kv.pull("w", out=pulled)
out["kv_lazy"] = pulled.asnumpy()
rsp_out = mx.nd.zeros(W.shape, stype="row_sparse")
kv.row_sparse_pull("w", out=rsp_out, row_ids=mx.nd.array([4, 1, 4], dtype="int64"))
out["kv_rows_values"], out["kv_rows_indices"] = rsp_out.data.asnumpy(), rsp_out.indices.asnumpy()

np.savez_compressed("sparse_golden.npz", meta=np.array(json.dumps(meta)), **out)
print("wrote", len(out), "arrays")
