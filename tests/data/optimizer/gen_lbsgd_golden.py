"""Write lbsgd_golden.npz: the weights MXNet 1.9.1's LBSGD gives after each of 12 updates of
two parameters from fixed gradients (fresh arrays each step), for the configurations below:

    /path/to/mxnet-venv/bin/python gen_lbsgd_golden.py
"""
import json

import mxnet as mx
import numpy as np

CONFIGS = {
    "linear": dict(learning_rate=0.1, momentum=0.9, warmup_strategy="linear", warmup_epochs=2,
                   batch_scale=2, updates_per_epoch=3, wd=0.01),
    "power2": dict(learning_rate=0.05, warmup_strategy="power2", warmup_epochs=3,
                   batch_scale=3, updates_per_epoch=2, rescale_grad=0.5),
    "sqrt": dict(learning_rate=0.05, momentum=0.5, warmup_strategy="sqrt", warmup_epochs=1,
                 batch_scale=4, updates_per_epoch=4, clip_gradient=0.8, begin_epoch=1),
    "lars": dict(learning_rate=0.01, momentum=0.9, warmup_strategy="lars", batch_scale=2,
                 wd=0.001),
    "plain": dict(learning_rate=0.1, momentum=0.9),
}


def main():
    rng = np.random.RandomState(0)
    weights0 = [rng.randn(4, 3).astype(np.float32), rng.randn(5).astype(np.float32)]
    grads = [[rng.randn(*w.shape).astype(np.float32) for w in weights0] for _ in range(12)]
    out = {"w0_0": weights0[0], "w0_1": weights0[1]}
    for step, gs in enumerate(grads):
        for i, g in enumerate(gs):
            out["g%d_%d" % (step, i)] = g
    for name, kwargs in CONFIGS.items():
        opt = mx.optimizer.create("lbsgd", **kwargs)
        weights = [mx.nd.array(w) for w in weights0]
        states = [opt.create_state(i, w) for i, w in enumerate(weights)]
        for step, gs in enumerate(grads):
            for i, (w, g) in enumerate(zip(weights, gs)):
                opt.update(i, w, mx.nd.array(g), states[i])
                out["%s/s%d_%d" % (name, step, i)] = w.asnumpy()
        out[name + "/kwargs"] = np.array(json.dumps(kwargs))
    np.savez_compressed("lbsgd_golden.npz", **out)


if __name__ == "__main__":
    main()
