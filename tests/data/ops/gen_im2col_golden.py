"""Write im2col_golden.npz: MXNet 1.9.1's numbers for im2col and col2im on small 2-D cases with
stride, dilate and pad. (MXNet 1.9.1's CPU kernels fail at run time on 1-D and 3-D data, though
its shape inference accepts them, so there are no MXNet numbers for those.)

Needs an MXNet 1.9.1 environment (the tests only read the .npz):
    OMP_NUM_THREADS=1 /tmp/mxenv/bin/python tests/data/ops/gen_im2col_golden.py
Per case `<name>/...`: `meta` (JSON: op, attrs), `in0` the input, `out` the output, `head` the
head gradient and `grad0` the input gradient MXNet's backward gives for that head.
"""
import json
import os

os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")  # the reference kernels, not oneDNN's

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

rng = np.random.RandomState(1991)


def normal(*shape):
    return rng.randn(*shape).astype("float32")


PARAMS_2D = dict(kernel=(2, 3), stride=(2, 1), dilate=(1, 2), pad=(1, 1))
# stride above the kernel and wide padding: some pixels are in no block, some blocks all padding
SPARSE_2D = dict(kernel=(2, 2), stride=(3, 2), pad=(2, 1))

# name: (op, attrs, input)
CASES = {
    "im2col_2d": ("im2col", PARAMS_2D, normal(2, 3, 5, 6)),
    "im2col_2d_defaults": ("im2col", dict(kernel=(3, 3)), normal(1, 2, 4, 5)),
    "im2col_2d_sparse": ("im2col", SPARSE_2D, normal(2, 2, 6, 5)),
    # overlapping blocks (stride below the dilated kernel) sum into the same pixels
    "col2im_2d": ("col2im", dict(output_size=(5, 6), **PARAMS_2D), normal(2, 18, 12)),
    "col2im_2d_sparse": ("col2im", dict(output_size=(6, 5), **SPARSE_2D), normal(1, 8, 9)),
}

def run(op, attrs, data):
    arg = mx.nd.array(data)
    arg.attach_grad()
    with mx.autograd.record():
        out = getattr(mx.nd, op)(arg, **attrs)
    head = rng.uniform(-1, 1, out.shape).astype("float32")
    out.backward(mx.nd.array(head))
    return out.asnumpy(), head, arg.grad.asnumpy()


def main():
    store = {}
    for name, (op, attrs, data) in CASES.items():
        out, head, grad = run(op, attrs, data)
        meta = dict(op=op, attrs={k: str(v) for k, v in attrs.items()})
        store[name + "/meta"] = np.array(json.dumps(meta))
        store[name + "/in0"] = data
        store[name + "/out"] = out
        store[name + "/head"] = head
        store[name + "/grad0"] = grad
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "im2col_golden.npz")
    np.savez_compressed(path, **store)
    print("wrote", path, len(CASES), "cases")


if __name__ == "__main__":
    main()
