"""Write linalg_golden.npz: outputs and input gradients of MXNet 1.9.1's linalg operators.

Run with an MXNet 1.9.1 environment (not needed by the tests):
    OMP_NUM_THREADS=1 python tests/data/ops/gen_linalg_golden.py
Each case is one batched call in float64: its inputs, the op's attrs (JSON), its visible
outputs, one head gradient per visible output, and the gradient of every input after a backward
pass through all visible outputs. Matrices are built so that every op is well defined: positive
definite for potrf, a triangle away from zero for potri/trsm, distinct eigenvalues for syevd,
and garbage in the triangle an op must not read (potrf, potri, trmm, trsm, syevd).
"""
import json
import os

os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

rs = np.random.RandomState(2024)


def r(*shape):
    return rs.randn(*shape)


def spd(batch, n):
    m = r(batch, n, n)
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def tri(batch, n):
    """A well-conditioned lower triangle with garbage above it."""
    return np.tril(r(batch, n, n), -1) + np.eye(n) * (2 + rs.rand(batch, n, 1)) + np.triu(
        r(batch, n, n), 1) * 5


def upper_noise(a):
    return a + np.triu(r(*a.shape), 1) * 3


# name: (op, attrs, [inputs])
CASES = {
    "gemm": ("gemm", dict(alpha=1.5, beta=-0.5), [r(2, 3, 4), r(2, 4, 5), r(2, 3, 5)]),
    "gemm_t_axis": ("gemm", dict(transpose_a=True, transpose_b=True, alpha=0.7, beta=2.0,
                                 axis=0), [r(4, 2, 3), r(5, 2, 4), r(3, 2, 5)]),
    "gemm2": ("gemm2", dict(transpose_b=True, alpha=-2.0), [r(2, 3, 4), r(2, 5, 4)]),
    "gemm2_axis": ("gemm2", dict(transpose_a=True, axis=-3), [r(4, 2, 3), r(4, 2, 5)]),
    "potrf": ("potrf", dict(), [upper_noise(spd(2, 4))]),
    "potrf_upper": ("potrf", dict(lower=False), [spd(2, 4) + np.tril(r(2, 4, 4), -1) * 3]),
    "potri": ("potri", dict(), [tri(2, 4)]),
    "potri_upper": ("potri", dict(lower=False), [np.swapaxes(tri(2, 4), -1, -2)]),
    "trmm": ("trmm", dict(alpha=1.3), [tri(2, 3), r(2, 3, 4)]),
    "trmm_right_t_upper": ("trmm", dict(transpose=True, rightside=True, lower=False,
                                        alpha=-0.6), [tri(2, 4), r(2, 3, 4)]),
    "trsm": ("trsm", dict(alpha=2.0), [tri(2, 3), r(2, 3, 4)]),
    "trsm_right_t": ("trsm", dict(transpose=True, rightside=True, alpha=-0.5),
                     [tri(2, 4), r(2, 3, 4)]),
    "trsm_upper_t": ("trsm", dict(transpose=True, lower=False),
                     [np.swapaxes(tri(2, 3), -1, -2), r(2, 3, 2)]),
    "syrk": ("syrk", dict(alpha=0.5), [r(2, 3, 5)]),
    "syrk_t": ("syrk", dict(transpose=True, alpha=-1.5), [r(2, 3, 5)]),
    "gelqf": ("gelqf", dict(), [r(2, 3, 5)]),
    "syevd": ("syevd", dict(), [upper_noise(spd(2, 4) - 3 * np.eye(4))]),
    "sumlogdiag": ("sumlogdiag", dict(), [spd(3, 3)]),
    "extractdiag": ("extractdiag", dict(offset=-1), [r(2, 4, 4)]),
    "makediag": ("makediag", dict(offset=2), [r(2, 3)]),
    "extracttrian": ("extracttrian", dict(offset=1), [r(2, 4, 4)]),
    "extracttrian_upper": ("extracttrian", dict(lower=False), [r(2, 4, 4)]),
    "maketrian": ("maketrian", dict(offset=-1), [r(2, 6)]),
    "maketrian_upper": ("maketrian", dict(lower=False), [r(2, 6)]),
    "inverse": ("inverse", dict(), [spd(2, 3) + r(2, 3, 3)]),
    "det": ("det", dict(), [r(3, 3, 3) + 2 * np.eye(3)]),
    "slogdet": ("slogdet", dict(), [r(3, 3, 3) + 0.5 * np.eye(3)]),
}


def run(op, attrs, inputs):
    args = [mx.nd.array(a, dtype="float64") for a in inputs]
    for a in args:
        a.attach_grad()
    with mx.autograd.record():
        outs = getattr(mx.nd.linalg, op)(*args, **attrs)
    outs = outs if isinstance(outs, list) else [outs]
    heads = [rs.uniform(-1, 1, o.shape) for o in outs]
    mx.autograd.backward(outs, [mx.nd.array(h, dtype="float64") for h in heads])
    return [o.asnumpy() for o in outs], heads, [a.grad.asnumpy() for a in args]


def main():
    store = {}
    for name, (op, attrs, inputs) in CASES.items():
        outs, heads, grads = run(op, attrs, inputs)
        store[name + "/meta"] = np.array(json.dumps(dict(op=op, attrs=attrs, n_in=len(inputs),
                                                         n_out=len(outs))))
        for i, a in enumerate(inputs):
            store["%s/in%d" % (name, i)] = a
            store["%s/grad%d" % (name, i)] = grads[i]
        for i, (o, h) in enumerate(zip(outs, heads)):
            store["%s/out%d" % (name, i)] = o
            store["%s/head%d" % (name, i)] = h
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "linalg_golden.npz")
    np.savez_compressed(path, **store)
    print("wrote", path, len(CASES), "cases")


if __name__ == "__main__":
    main()
