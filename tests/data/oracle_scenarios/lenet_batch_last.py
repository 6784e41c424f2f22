"""LeNet at its full size (1x28x28, conv 5x5x20, max pool, conv 5x5x50, max pool, fc 500,
fc 10, tanh): minimod fuses both tanh layers into their pooling and keeps every array from
conv1's output to pool2's input batch-last, with conv1's 24-wide output summed in the
batch-last order. Outputs, input gradients, the convolutions' gradients and an SGD-momentum
trajectory of three steps, then inference."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import batch, data, det_params, to_nd  # noqa: E402


def _lenet(mx):
    net = mx.sym.Variable("data")
    for i, filters in ((1, 20), (2, 50)):
        net = mx.sym.Convolution(net, kernel=(5, 5), num_filter=filters, name="conv%d" % i)
        net = mx.sym.Activation(net, act_type="tanh", name="tanh%d" % i)
        net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2),
                             name="pool%d" % i)
    net = mx.sym.FullyConnected(mx.sym.Flatten(net), num_hidden=500, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh3")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def run(mx):
    x, y = data(40, (1, 28, 28), 10, seed=5)
    sym = _lenet(mx)
    args, auxs = det_params(sym, data=(10, 1, 28, 28), softmax_label=(10,))
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.bind(data_shapes=[("data", (10, 1, 28, 28))], label_shapes=[("softmax_label", (10,))],
             inputs_need_grad=True)
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.05,
                                                          "momentum": 0.9})
    out = {}
    for i in range(3):
        mod.forward_backward(batch(mx, x, y, i, 10))
        out["prob%d" % i] = mod.get_outputs()[0].asnumpy()
        out["dx%d" % i] = mod.get_input_grads()[0].asnumpy()
        exe = mod._exec_group.execs[0]
        for name in ("conv1_weight", "conv1_bias", "conv2_weight", "conv2_bias"):
            out["g_%s_%d" % (name, i)] = exe.grad_dict[name].asnumpy()
        mod.update()
    arg, _ = mod.get_params()
    for name in sorted(arg):
        out["p_%s" % name] = arg[name].asnumpy()
    mod.forward(batch(mx, x, y, 3, 10), is_train=False)
    out["eval"] = mod.get_outputs()[0].asnumpy()
    return out
