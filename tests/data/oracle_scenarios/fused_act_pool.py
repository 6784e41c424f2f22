"""Convolutions whose tanh / relu feeds a 2x2 max pooling (the nodes minimod fuses): outputs,
input gradients, every parameter gradient and an SGD-momentum trajectory, with inputs large
enough that some tanh windows saturate; and the same network with the activation also an
output (which minimod leaves unfused)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import det_params, to_nd  # noqa: E402


def _net(mx, expose_act):
    data = mx.sym.Variable("data")
    c1 = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv1")
    a1 = mx.sym.Activation(c1, act_type="tanh", name="tanh1")
    p1 = mx.sym.Pooling(a1, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    c2 = mx.sym.Convolution(p1, kernel=(3, 3), num_filter=6, pad=(1, 1), name="conv2")
    a2 = mx.sym.Activation(c2, act_type="relu", name="relu2")
    p2 = mx.sym.Pooling(a2, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    fc = mx.sym.FullyConnected(mx.sym.Flatten(p2), num_hidden=5, name="fc")
    out = mx.sym.SoftmaxOutput(fc, name="softmax")
    if expose_act:
        return mx.sym.Group([out, mx.sym.BlockGrad(a1, name="tanh1_seen")])
    return out


def run(mx):
    rng = np.random.RandomState(21)
    x = (rng.randn(48, 2, 10, 10) * 12).astype(np.float32)  # saturates some tanh windows
    y = rng.randint(0, 5, 48).astype(np.float32)
    out = {}
    for tag, expose in (("fused", False), ("exposed", True)):
        with mx.name.NameManager():
            sym = _net(mx, expose)
        args, auxs = det_params(sym, data=(8, 2, 10, 10), softmax_label=(8,))
        mod = mx.mod.Module(sym, context=mx.cpu())
        mod.bind(data_shapes=[("data", (8, 2, 10, 10))], label_shapes=[("softmax_label", (8,))],
                 inputs_need_grad=True)
        mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
        mod.init_optimizer(optimizer="sgd",
                           optimizer_params={"learning_rate": 0.05, "momentum": 0.9})
        for i in range(5):
            batch = mx.io.DataBatch([mx.nd.array(x[i * 8:(i + 1) * 8])],
                                    [mx.nd.array(y[i * 8:(i + 1) * 8])])
            mod.forward_backward(batch)
            out["%s_prob%d" % (tag, i)] = mod.get_outputs()[0].asnumpy()
            out["%s_dx%d" % (tag, i)] = mod.get_input_grads()[0].asnumpy()
            exe = mod._exec_group.execs[0]
            for name in ("conv1_weight", "conv2_weight", "conv2_bias"):
                out["%s_g_%s_%d" % (tag, name, i)] = exe.grad_dict[name].asnumpy()
            mod.update()
        arg, _ = mod.get_params()
        for name in sorted(arg):
            out["%s_p_%s" % (tag, name)] = arg[name].asnumpy()
        batch = mx.io.DataBatch([mx.nd.array(x[40:48])], [mx.nd.array(y[40:48])])
        mod.forward(batch, is_train=False)
        out["%s_eval" % tag] = mod.get_outputs()[0].asnumpy()
    return out
