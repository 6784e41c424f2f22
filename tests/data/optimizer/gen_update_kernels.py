"""Writes update_kernels.npz: MXNet 1.9.1's optimizer update kernels (`mx.nd.sgd_mom_update`
...) called three times on arrays drawn here, with the hyperparameters in CASES (run with
MXNet's Python). Stored per case: the inputs (`<id>/w0`, `/g<step>`, `/s<i>_0`), and after
each step the weight and every state.

    OMP_NUM_THREADS=1 /path/to/mxnet-venv/bin/python tests/data/optimizer/gen_update_kernels.py
"""
import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# id: (kernel, number of states, keyword arguments)
CASES = {
    "sgd": ("sgd_update", 0, dict(lr=0.1, wd=0.01, rescale_grad=0.5)),
    "sgd_clip": ("sgd_update", 0, dict(lr=0.05, clip_gradient=0.3)),
    "sgd_mom": ("sgd_mom_update", 1, dict(lr=0.1, momentum=0.9, wd=0.001, rescale_grad=0.25)),
    "sgd_mom_clip": ("sgd_mom_update", 1, dict(lr=0.1, momentum=0.8, clip_gradient=0.2)),
    "nag": ("nag_mom_update", 1, dict(lr=0.1, momentum=0.9, wd=0.01)),
    "adam": ("adam_update", 2, dict(lr=0.01, wd=0.001, rescale_grad=0.5)),
    "adam_clip": ("adam_update", 2, dict(lr=0.02, beta1=0.8, beta2=0.99, epsilon=1e-6,
                                         clip_gradient=0.5)),
    "rmsprop": ("rmsprop_update", 1, dict(lr=0.01, gamma1=0.9, wd=0.01, clip_weights=0.9)),
    "rmspropalex": ("rmspropalex_update", 3, dict(lr=0.01, gamma1=0.9, gamma2=0.8,
                                                  rescale_grad=0.5)),
    "signsgd": ("signsgd_update", 0, dict(lr=0.01, wd=0.1)),
    "signum": ("signum_update", 1, dict(lr=0.01, momentum=0.9, wd=0.01, wd_lh=0.001)),
    "ftrl": ("ftrl_update", 2, dict(lr=0.1, lamda1=0.01, beta=1.0, wd=0.01)),
}


def main():
    rng = np.random.RandomState(0)
    store = {}
    for cid, (kernel, n_states, kwargs) in CASES.items():
        w = rng.uniform(-1, 1, (4, 5)).astype(np.float32)
        states = [np.abs(rng.uniform(-0.5, 0.5, w.shape)).astype(np.float32)
                  for _ in range(n_states)]
        if kernel == "rmspropalex_update":  # n >= g**2, else sqrt(n - g**2 + eps) is NaN
            states[0] += np.float32(0.5)
        store[cid + "/w0"] = w
        for i, s in enumerate(states):
            store["%s/s%d_0" % (cid, i)] = s
        weight = mx.nd.array(w)
        nd_states = [mx.nd.array(s) for s in states]
        for step in range(1, 4):
            g = rng.uniform(-2, 2, w.shape).astype(np.float32)
            store["%s/g%d" % (cid, step)] = g
            getattr(mx.nd, kernel)(weight, mx.nd.array(g), *nd_states, out=weight, **kwargs)
            store["%s/w%d" % (cid, step)] = weight.asnumpy()
            for i, s in enumerate(nd_states):
                store["%s/s%d_%d" % (cid, i, step)] = s.asnumpy()
        store[cid + "/meta"] = np.array(json.dumps(
            dict(kernel=kernel, n_states=n_states, kwargs=kwargs)))
    np.savez_compressed(os.path.join(HERE, "update_kernels.npz"), **store)


if __name__ == "__main__":
    main()
