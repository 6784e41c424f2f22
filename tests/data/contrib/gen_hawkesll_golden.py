"""Write hawkesll_golden.npz: MXNet 1.9.1's `mx.nd.contrib.hawkesll` on three batches, with
the gradients of sum(loglik) to lda, alpha and beta (the ones MXNet computes).

Run with an MXNet 1.9.1 environment (not needed by the tests), from the repository root:
    OMP_NUM_THREADS=1 python tests/data/contrib/gen_hawkesll_golden.py
"""
import os

import mxnet as mx
import numpy as np

NAMES = ("lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time")


def batch(seed, n, t, k):
    rng = np.random.RandomState(seed)
    lags = rng.uniform(0.05, 1.0, (n, t))
    return {"lda": rng.uniform(0.5, 2, (n, k)), "alpha": rng.uniform(0.1, 0.8, (k,)),
            "beta": rng.uniform(0.5, 3, (k,)), "state": rng.uniform(0, 1, (n, k)),
            "lags": lags, "marks": rng.randint(0, k, (n, t)),
            "valid_length": rng.randint(0, t + 1, (n,)).astype(float),
            "max_time": lags.sum(axis=1) + rng.uniform(0, 2, (n,))}


def example():
    """The batch of MXNet's own documentation of the operator."""
    n, t = 4, 4
    return {"lda": np.tile([1.5, 2.0, 3.0], (n, 1)), "alpha": np.array([0.2, 0.3, 0.4]),
            "beta": np.array([1.0, 2.0, 3.0]), "state": np.zeros((n, 3)),
            "lags": np.array([[6, 7, 8, 9], [1, 2, 3, 4], [3, 4, 5, 6], [8, 9, 10, 11.]]),
            "marks": np.zeros((n, t)), "valid_length": np.array([1, 2, 3, 4.]),
            "max_time": np.ones(n) * 100.0}


golden = {}
for case, inputs in (("small", batch(3, 4, 6, 3)), ("wide", batch(7, 16, 20, 5)),
                     ("example", example())):
    arrays = [mx.nd.array(inputs[name], dtype="int32" if name == "marks" else "float32")
              for name in NAMES]
    for a in arrays[:3]:
        a.attach_grad()
    with mx.autograd.record():
        loglik, state = mx.nd.contrib.hawkesll(*arrays)
    loglik.backward()
    for name, a in zip(NAMES, arrays):
        golden["%s/%s" % (case, name)] = a.asnumpy()
    golden[case + "/loglik"] = loglik.asnumpy()
    golden[case + "/out_state"] = state.asnumpy()
    for name, a in zip(NAMES[:3], arrays[:3]):
        golden["%s/grad_%s" % (case, name)] = a.grad.asnumpy()
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hawkesll_golden.npz")
np.savez_compressed(path + ".tmp.npz", **golden)
os.replace(path + ".tmp.npz", path)
print("wrote %d arrays to %s" % (len(golden), path), flush=True)
