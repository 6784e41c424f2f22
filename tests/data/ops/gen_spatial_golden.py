"""Write spatial_golden.npz: MXNet 1.9.1's numbers for GridGenerator, BilinearSampler,
SpatialTransformer and Correlation on small cases.

Needs an MXNet 1.9.1 environment (the tests only read the .npz):
    OMP_NUM_THREADS=1 /tmp/mxenv/bin/python tests/data/ops/gen_spatial_golden.py
Per case `<name>/...`: `meta` (JSON: op, attrs, number of inputs, which inputs have gradients),
`in<i>` the inputs, `out` the visible output, `head` the head gradient and `grad<i>` the input
gradients MXNet's backward gives for that head.
"""
import json
import os

os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")  # the reference kernels, not oneDNN's

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

rng = np.random.RandomState(2024)


def normal(*shape):
    return rng.randn(*shape).astype("float32")


def uniform(low, high, *shape):
    return rng.uniform(low, high, shape).astype("float32")


def sampler_grid():
    """Points inside, on the border (exactly +-1), on pixel centres and outside the input."""
    grid = uniform(-1.4, 1.4, 2, 2, 3, 4)
    grid[0, :, 0, :] = [[-1, 1, 1, -1], [-1, -1, 1, 1]]     # the four corners
    grid[0, :, 1, :] = [[0, 0.5, -0.5, 1.02], [0, -0.5, 1, 0.3]]  # pixel centres, just out
    grid[1, :, 2, :2] = [[-3, 2.5], [0.2, -2.2]]            # far outside
    return grid


def affine(scale, shift, noise):
    theta = np.array([scale, 0.1, shift, -0.15, scale, -shift], dtype="float32")
    return (theta + noise * rng.randn(2, 6)).astype("float32")


def correlation_pair(shape, ties=False):
    a, b = normal(*shape), normal(*shape)
    if ties:
        b[:, :, :2] = a[:, :, :2]  # equal values: the |a - b| gradient's sign at zero
    return [a, b]


# name: (op, attrs, inputs, inputs to differentiate)
CASES = {
    "grid_affine": ("GridGenerator", dict(transform_type="affine", target_shape=(3, 4)),
                    [normal(2, 6)], [0]),
    "grid_warp": ("GridGenerator", dict(transform_type="warp"), [normal(2, 2, 3, 5)], [0]),
    "sampler": ("BilinearSampler", dict(), [normal(2, 3, 4, 5), sampler_grid()], [0, 1]),
    "sampler_upsample": ("BilinearSampler", dict(cudnn_off=True),
                         [normal(1, 2, 3, 3), uniform(-1, 1, 1, 2, 5, 6)], [0, 1]),
    "stn_zoom_in": ("SpatialTransformer", dict(transform_type="affine", sampler_type="bilinear",
                                               target_shape=(4, 3)),
                    [normal(2, 3, 5, 6), affine(0.7, 0.1, 0.05)], [0, 1]),
    "stn_zoom_out": ("SpatialTransformer", dict(transform_type="affine", sampler_type="bilinear",
                                                target_shape=(5, 5)),
                     [normal(2, 2, 4, 4), affine(1.5, 0.3, 0.1)], [0, 1]),
    "corr_multiply": ("Correlation", dict(kernel_size=3, max_displacement=2, pad_size=2),
                      correlation_pair((2, 3, 6, 7)), [0, 1]),
    "corr_multiply_strides": ("Correlation", dict(kernel_size=1, max_displacement=4, stride1=2,
                                                  stride2=2, pad_size=3),
                              correlation_pair((1, 2, 7, 8)), [0, 1]),
    "corr_subtract": ("Correlation", dict(kernel_size=3, max_displacement=1, stride1=2,
                                          pad_size=1, is_multiply=False),
                      correlation_pair((2, 2, 6, 5), ties=True), [0, 1]),
    "corr_defaults": ("Correlation", dict(), correlation_pair((1, 2, 5, 6)), [0, 1]),
}


def run(op, attrs, inputs, wrt):
    args = [mx.nd.array(a, dtype=a.dtype) for a in inputs]
    for i in wrt:
        args[i].attach_grad()
    with mx.autograd.record():
        out = getattr(mx.nd, op)(*args, **attrs)
    head = rng.uniform(-1, 1, out.shape).astype("float32")
    out.backward(mx.nd.array(head))
    return out.asnumpy(), head, [args[i].grad.asnumpy() for i in wrt]


def main():
    store = {}
    for name, (op, attrs, inputs, wrt) in CASES.items():
        out, head, grads = run(op, attrs, inputs, wrt)
        meta = dict(op=op, attrs={k: str(v) for k, v in attrs.items()}, n_in=len(inputs),
                    wrt=wrt)
        store[name + "/meta"] = np.array(json.dumps(meta))
        for i, a in enumerate(inputs):
            store["%s/in%d" % (name, i)] = a
        store[name + "/out"] = out
        store[name + "/head"] = head
        for i, g in zip(wrt, grads):
            store["%s/grad%d" % (name, i)] = g
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spatial_golden.npz")
    np.savez_compressed(path, **store)
    print("wrote", path, len(CASES), "cases")


if __name__ == "__main__":
    main()
