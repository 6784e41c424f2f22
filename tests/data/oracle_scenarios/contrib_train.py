"""Contrib operators inside one trained graph (3 SGD-momentum steps; outputs, input and weight
gradients): a self-attention block on the interleaved projections (interleaved_matmul_selfatt_qk
/ _valatt, div_sqrt_dim, softmax) with LayerNorm, and an image branch through
DeformableConvolution twice (offsets from convolutions; the second dilated, with two
deformable groups and no bias), BilinearResize2D (by size and by scale),
AdaptiveAvgPooling2D, SyncBatchNorm (one device: plain BatchNorm statistics), quadratic,
gradientmultiplier and arange_like; then the BatchNorm moving statistics after training.
Not here: ModulatedDeformableConvolution, which MXNet 1.9.1 runs on a GPU only."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import det_params, params_out, to_nd  # noqa: E402

N, L, HEADS, UNITS = 2, 5, 2, 8
C, HW = 3, 6


def _attention(mx):
    tokens = mx.sym.Variable("tokens")  # (L, N, UNITS)
    qkv = mx.sym.FullyConnected(tokens, num_hidden=3 * UNITS, flatten=False, name="qkv")
    scores = mx.sym.contrib.interleaved_matmul_selfatt_qk(qkv, heads=HEADS)  # (N*H, L, L)
    probs = mx.sym.softmax(mx.sym.contrib.div_sqrt_dim(scores) * 4.0, axis=-1)
    att = mx.sym.contrib.interleaved_matmul_selfatt_valatt(qkv, probs, heads=HEADS)
    normed = mx.sym.LayerNorm(att + tokens, axis=-1, name="ln")
    positions = mx.sym.contrib.arange_like(normed, axis=0)  # (L,)
    weighted = mx.sym.broadcast_mul(normed, mx.sym.reshape(positions + 1, (L, 1, 1)))
    return mx.sym.mean(weighted, axis=0)  # (N, UNITS)


def _image(mx):
    image = mx.sym.Variable("image")  # (N, C, HW, HW)
    offset = mx.sym.Convolution(image, kernel=(3, 3), pad=(1, 1), num_filter=18, name="off")
    deform = mx.sym.contrib.DeformableConvolution(image, offset * 0.5, kernel=(3, 3),
                                                  pad=(1, 1), num_filter=4, name="dcn")
    offset2 = mx.sym.Convolution(deform, kernel=(3, 3), pad=(2, 2), dilate=(2, 2),
                                 num_filter=36, name="off2")
    modulated = mx.sym.contrib.DeformableConvolution(
        deform, offset2 * 0.3, kernel=(3, 3), pad=(2, 2), dilate=(2, 2), num_filter=4,
        num_deformable_group=2, no_bias=True, name="dcn2")
    bn = mx.sym.contrib.SyncBatchNorm(modulated, fix_gamma=False, key="sbn", name="sbn")
    up = mx.sym.contrib.BilinearResize2D(mx.sym.relu(bn), height=9, width=7)
    down = mx.sym.contrib.BilinearResize2D(up, scale_height=0.5, scale_width=0.5,
                                           mode="odd_scale")
    pooled = mx.sym.contrib.AdaptiveAvgPooling2D(down, output_size=(2, 3))
    squashed = mx.sym.contrib.quadratic(pooled, a=0.2, b=0.5, c=-0.1)
    return mx.sym.Flatten(mx.sym.contrib.gradientmultiplier(squashed, scalar=0.5))


def _net(mx):
    feat = mx.sym.concat(_attention(mx), _image(mx), dim=1)
    fc = mx.sym.FullyConnected(feat, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def run(mx):
    rng = np.random.RandomState(41)
    tokens = rng.uniform(-1, 1, size=(3, L, N, UNITS)).astype(np.float32)
    images = rng.uniform(-1, 1, size=(3, N, C, HW, HW)).astype(np.float32)
    labels = rng.randint(0, 3, size=(3, N)).astype(np.float32)
    with mx.name.NameManager():
        sym = _net(mx)
    shapes = dict(tokens=(L, N, UNITS), image=(N, C, HW, HW), softmax_label=(N,))
    args, auxs = det_params(sym, scale=0.3, **shapes)
    names = ["tokens", "image"]
    mod = mx.mod.Module(sym, data_names=names, context=mx.cpu())
    mod.bind(data_shapes=[mx.io.DataDesc("tokens", shapes["tokens"], layout="TNC"),
                          mx.io.DataDesc("image", shapes["image"])],
             label_shapes=[("softmax_label", (N,))], inputs_need_grad=True)
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1,
                                                          "momentum": 0.9})
    out = {}
    grads = ("qkv_weight", "ln_gamma", "dcn_weight", "off_weight", "dcn2_weight",
             "off2_weight", "sbn_gamma")
    for i in range(3):
        mod.forward_backward(mx.io.DataBatch([mx.nd.array(tokens[i]), mx.nd.array(images[i])],
                                             [mx.nd.array(labels[i])]))
        out["prob%d" % i] = mod.get_outputs()[0].asnumpy()
        for name, grad in zip(names, mod.get_input_grads()):
            out["d_%s%d" % (name, i)] = grad.asnumpy()
        exe = mod._exec_group.execs[0]
        for name in grads:
            out["g_%s_%d" % (name, i)] = exe.grad_dict[name].asnumpy()
        mod.update()
    out.update(params_out(mod, "p"))
    mod.forward(mx.io.DataBatch([mx.nd.array(tokens[0]), mx.nd.array(images[0])],
                                [mx.nd.array(labels[0])]), is_train=False)
    out["eval"] = mod.get_outputs()[0].asnumpy()
    return out
