"""Less common layers trained together (3 SGD-momentum steps, input and parameter gradients):
Deconvolution, LRN, average pooling without the padding, global max pooling, InstanceNorm,
LayerNorm, leaky / ELU / SELU LeakyReLU, L2Normalization, UpSampling, Pad, Crop, SliceChannel,
Concat, broadcasting arithmetic, and SoftmaxOutput with multi_output, ignore_label and
normalization='valid'."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import batch, det_params, to_nd, train_steps  # noqa: E402


def _net(mx):
    data = mx.sym.Variable("data")
    c1 = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, name="c1")
    n1 = mx.sym.InstanceNorm(c1, name="in1")
    # PReLU here would hit an MXNet bug (docs/compatibility.md): its gamma reads the output
    a1 = mx.sym.LeakyReLU(n1, act_type="leaky", slope=0.2, name="leaky1")
    lrn = mx.sym.LRN(a1, nsize=3, alpha=0.001, beta=0.75, knorm=2, name="lrn")
    avg = mx.sym.Pooling(lrn, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg",
                         count_include_pad=False, name="avg")
    dec = mx.sym.Deconvolution(avg, kernel=(2, 2), stride=(2, 2), num_filter=3, name="dec")
    up = mx.sym.UpSampling(avg, scale=2, sample_type="nearest", name="up")
    both = mx.sym.Concat(dec, up, dim=1, name="cat")
    padded = mx.sym.Pad(both, mode="edge", pad_width=(0, 0, 0, 0, 1, 1, 1, 1), name="pad")
    cropped = mx.sym.Crop(padded, offset=(1, 1), h_w=(6, 6), name="crop")
    parts = mx.sym.SliceChannel(cropped, num_outputs=7, axis=1, name="slice")
    mixed = mx.sym.broadcast_mul(parts[0], parts[3]) + mx.sym.broadcast_add(
        parts[5], mx.sym.mean(parts[6], axis=(2, 3), keepdims=True))
    elu = mx.sym.LeakyReLU(mixed, act_type="elu", slope=0.3, name="elu")
    gmax = mx.sym.Pooling(mx.sym.LeakyReLU(cropped, act_type="selu", name="selu"),
                          kernel=(1, 1), global_pool=True, pool_type="max", name="gmax")
    flat = mx.sym.Concat(mx.sym.Flatten(elu), mx.sym.Flatten(gmax), dim=1)
    normed = mx.sym.LayerNorm(flat, name="ln")
    l2 = mx.sym.L2Normalization(normed, mode="instance", name="l2")
    fc = mx.sym.FullyConnected(l2, num_hidden=12, name="fc")
    scores = mx.sym.Reshape(fc, shape=(0, 4, 3), name="scores")
    return mx.sym.SoftmaxOutput(scores, multi_output=True, use_ignore=True, ignore_label=1,
                                normalization="valid", name="softmax")


def run(mx):
    out = {}
    rng = np.random.RandomState(7)
    x = rng.uniform(-1, 1, size=(12, 2, 6, 6)).astype(np.float32)
    y = rng.randint(0, 4, size=(12, 3)).astype(np.float32)
    with mx.name.NameManager():
        sym = _net(mx)
    args, auxs = det_params(sym, scale=0.3, data=(4, 2, 6, 6), softmax_label=(4, 3))
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.bind(data_shapes=[("data", (4, 2, 6, 6))], label_shapes=[("softmax_label", (4, 3))],
             inputs_need_grad=True)
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1,
                                                          "momentum": 0.9, "wd": 0.001})
    batches = [batch(mx, x, y, i, 4) for i in range(3)]
    out.update(train_steps(mx, mod, batches, grads=("c1_weight", "in1_gamma", "dec_weight",
                                                   "ln_gamma", "fc_weight")))
    mod.forward(mx.io.DataBatch([mx.nd.array(x[:4])], [mx.nd.array(y[:4])]), is_train=False)
    out["eval"] = mod.get_outputs()[0].asnumpy()
    return out
