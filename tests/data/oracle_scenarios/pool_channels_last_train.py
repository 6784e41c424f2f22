"""Channels-last pooling inside a trained graph (3 SGD-momentum steps on two devices): NHWC
max and avg pooling of an activated input, NDHWC sum pooling and global NHWC pooling feeding
dense layers; outputs, input gradients and parameters."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import batch, det_params, to_nd, train_steps  # noqa: E402


def _net(mx):
    data = mx.sym.Variable("data")  # (N, 6, 6, 4): channels last
    act = mx.sym.Activation(data, act_type="tanh")
    mx_pool = mx.sym.Pooling(act, kernel=(2, 2), stride=(2, 2), pool_type="max", layout="NHWC")
    avg = mx.sym.Pooling(act, kernel=(3, 3), stride=(1, 1), pad=(1, 1), pool_type="avg",
                         count_include_pad=False, layout="NHWC")
    glob = mx.sym.Pooling(avg, kernel=(1, 1), global_pool=True, pool_type="max",
                          layout="NHWC")
    vol = mx.sym.Reshape(mx_pool, shape=(0, 3, 3, 2, 2))  # (N, 3, 3, 2, C=2)
    summed = mx.sym.Pooling(vol, kernel=(2, 2, 2), pool_type="sum", layout="NDHWC")
    feat = mx.sym.concat(mx.sym.Flatten(mx_pool), mx.sym.Flatten(glob), mx.sym.Flatten(summed),
                         dim=1)
    fc = mx.sym.FullyConnected(feat, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def run(mx):
    rng = np.random.RandomState(67)
    x = rng.uniform(-1, 1, size=(12, 6, 6, 4)).astype(np.float32)
    y = rng.randint(0, 3, size=(12,)).astype(np.float32)
    with mx.name.NameManager():
        sym = _net(mx)
    args, auxs = det_params(sym, scale=0.4, data=(4, 6, 6, 4), softmax_label=(4,))
    mod = mx.mod.Module(sym, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[("data", (4, 6, 6, 4))], label_shapes=[("softmax_label", (4,))],
             inputs_need_grad=True)
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.2,
                                                          "momentum": 0.9})
    return train_steps(mx, mod, [batch(mx, x, y, i, 4) for i in range(3)])
