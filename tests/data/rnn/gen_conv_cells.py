"""Writes conv_cells_golden.json and conv_cells_golden.npz: MXNet 1.9.1's mx.rnn convolutional
cells unrolled (the symbol JSON, state_info) and run forward on fixed inputs and parameters.
Run with MXNet's Python:

    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=1 \
        /path/to/mxnet-venv/bin/python tests/data/rnn/gen_conv_cells.py
"""
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (cell class, keyword arguments)
CASES = {
    "conv_rnn": ("ConvRNNCell", dict(input_shape=(2, 3, 6, 6), num_hidden=4,
                                     i2h_stride=(2, 2), i2h_pad=(0, 0), prefix="cr_")),
    "conv_lstm": ("ConvLSTMCell", dict(input_shape=(2, 3, 5, 5), num_hidden=2,
                                       h2h_kernel=(3, 1), prefix="cl_")),
    "conv_gru": ("ConvGRUCell", dict(input_shape=(2, 2, 4, 4), num_hidden=3, i2h_kernel=(1, 1),
                                     i2h_pad=(0, 0), h2h_dilate=(2, 2), prefix="cg_")),
}
STEPS = 3


def build(mx, cls, kwargs):
    """(unrolled outputs merged NTC, state_info) of a fresh cell."""
    with mx.name.NameManager():
        cell = getattr(mx.rnn, cls)(**kwargs)
        outputs, states = cell.unroll(STEPS, mx.sym.var("data"), layout="NTC",
                                      merge_outputs=True)
        return mx.sym.Group([outputs] + list(states)), cell.state_info


def run(mx, name):
    cls, kwargs = CASES[name]
    sym, info = build(mx, cls, kwargs)
    shape = (kwargs["input_shape"][0], STEPS) + tuple(kwargs["input_shape"][1:])
    exe = sym.simple_bind(mx.cpu(), data=shape, grad_req="null")
    rng = np.random.RandomState(sorted(CASES).index(name))
    arrays = {}
    for key, arr in sorted(exe.arg_dict.items()):
        arrays[key] = rng.uniform(-0.5, 0.5, arr.shape).astype(np.float32)
        arr[:] = arrays[key]
    outs = [o.asnumpy() for o in exe.forward()]
    return sym.tojson(), info, arrays, outs


if __name__ == "__main__":
    import mxnet as mx
    golden, store = {}, {}
    for name in CASES:
        js, info, arrays, outs = run(mx, name)
        golden[name] = {"json": js, "state_info": [dict(i, shape=list(i["shape"]))
                                                   for i in info]}
        for key, value in arrays.items():
            store["%s/in/%s" % (name, key)] = value
        for i, value in enumerate(outs):
            store["%s/out%d" % (name, i)] = value
    with open(os.path.join(HERE, "conv_cells_golden.json"), "w") as f:
        json.dump(golden, f, indent=1)
    np.savez_compressed(os.path.join(HERE, "conv_cells_golden.npz"), **store)
    print("wrote", len(CASES), "cells")
