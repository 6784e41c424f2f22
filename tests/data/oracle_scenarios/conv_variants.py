"""Convolution-family variants trained together (3 SGD steps, input and weight gradients):
grouped and dilated 2-D convolution without bias, 1-D and 3-D convolution, Deconvolution with
adj and with target_shape, sum / lp / full-convention pooling, BatchNorm on the last axis with
its mean and variance as outputs, and BatchNorm with use_global_stats."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import batch, det_params, to_nd, train_steps  # noqa: E402


def _net(mx):
    data = mx.sym.Variable("data")  # (N, 4, 7, 7)
    g = mx.sym.Convolution(data, kernel=(3, 3), num_filter=6, num_group=2, dilate=(2, 2),
                           pad=(2, 2), no_bias=True, name="gconv")
    bn = mx.sym.BatchNorm(g, use_global_stats=True, fix_gamma=False, name="bn_global")
    p_sum = mx.sym.Pooling(bn, kernel=(2, 2), stride=(2, 2), pool_type="sum", name="psum")
    p_lp = mx.sym.Pooling(bn, kernel=(3, 3), stride=(2, 2), pool_type="lp", p_value=2,
                          name="plp")
    p_full = mx.sym.Pooling(bn, kernel=(2, 2), stride=(2, 2), pool_type="max",
                            pooling_convention="full", name="pfull")  # 4x4
    dec = mx.sym.Deconvolution(p_sum, kernel=(3, 3), stride=(2, 2), adj=(1, 1), pad=(1, 1),
                               num_filter=2, name="dec_adj")  # 3x3 -> 6x6
    # MXNet's oneDNN build cannot train a Deconvolution whose target_shape crops
    # (tests/ops/test_deconv_target.py): here it is the natural 8x8
    dec_t = mx.sym.Deconvolution(p_full, kernel=(2, 2), stride=(2, 2), num_filter=2,
                                 target_shape=(8, 8), name="dec_target")
    both = mx.sym.Concat(mx.sym.Flatten(dec), mx.sym.Flatten(dec_t),
                         mx.sym.Flatten(p_lp), dim=1)
    seq = mx.sym.Reshape(both, shape=(0, 2, -1))  # (N, 2, 127) for a 1-D convolution
    c1d = mx.sym.Convolution(seq, kernel=(3,), stride=(2,), num_filter=3, name="conv1d")
    vol = mx.sym.Reshape(mx.sym.slice_axis(c1d, axis=2, begin=0, end=27),
                         shape=(0, 3, 3, 3, 3))
    c3d = mx.sym.Convolution(vol, kernel=(2, 2, 2), num_filter=4, name="conv3d")
    last = mx.sym.transpose(c3d, axes=(0, 2, 3, 4, 1))  # channels last
    bn_last = mx.sym.BatchNorm(last, axis=-1, output_mean_var=True, fix_gamma=False,
                               name="bn_last")
    fc = mx.sym.FullyConnected(mx.sym.Flatten(bn_last[0]), num_hidden=3, name="fc")
    return mx.sym.Group([mx.sym.SoftmaxOutput(fc, name="softmax"),
                         mx.sym.BlockGrad(bn_last[1]), mx.sym.BlockGrad(bn_last[2])])


def run(mx):
    out = {}
    rng = np.random.RandomState(13)
    x = rng.uniform(-1, 1, size=(12, 4, 7, 7)).astype(np.float32)
    y = rng.randint(0, 3, size=(12,)).astype(np.float32)
    with mx.name.NameManager():
        sym = _net(mx)
    args, auxs = det_params(sym, scale=0.3, data=(4, 4, 7, 7), softmax_label=(4,))
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.bind(data_shapes=[("data", (4, 4, 7, 7))], label_shapes=[("softmax_label", (4,))],
             inputs_need_grad=True)
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.05,
                                                          "momentum": 0.9})
    batches = [batch(mx, x, y, i, 4) for i in range(3)]
    out.update(train_steps(mx, mod, batches, grads=(
        "gconv_weight", "dec_adj_weight", "dec_target_weight", "conv1d_weight", "conv3d_weight",
        "bn_last_gamma", "bn_global_gamma")))
    mod.forward(mx.io.DataBatch([mx.nd.array(x[:4])], [mx.nd.array(y[:4])]), is_train=False)
    out["eval"] = mod.get_outputs()[0].asnumpy()
    return out
