"""Helpers for the scenarios in this folder (numpy-seeded inputs only, no engine RNG).

`det_params`, `to_nd` and `params_out` come from common.py, the oracle's own helpers.
"""
import numpy as np
from common import det_params, params_out, to_nd  # noqa: F401 (re-exported)


def data(n, shape, classes, seed=1):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, size=(n,) + tuple(shape)).astype(np.float32)
    y = rng.randint(0, classes, size=(n,)).astype(np.float32)
    return x, y


def mlp(mx, hidden=(12,), classes=4):
    net = mx.sym.Variable("data")
    for i, h in enumerate(hidden):
        net = mx.sym.FullyConnected(net, num_hidden=h, name="fc%d" % i)
        net = mx.sym.Activation(net, act_type="tanh", name="act%d" % i)
    net = mx.sym.FullyConnected(net, num_hidden=classes, name="out")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def conv_bn(mx, classes=5):
    data = mx.sym.Variable("data")
    c1 = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv1")
    b1 = mx.sym.BatchNorm(c1, fix_gamma=False, name="bn1")
    a1 = mx.sym.Activation(b1, act_type="relu", name="relu1")
    p1 = mx.sym.Pooling(a1, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    c2 = mx.sym.Convolution(p1, kernel=(2, 2), num_filter=6, name="conv2")
    b2 = mx.sym.BatchNorm(c2, name="bn2")
    a2 = mx.sym.Activation(b2, act_type="tanh", name="tanh2")
    fc = mx.sym.FullyConnected(mx.sym.Flatten(a2), num_hidden=classes, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def batch(mx, x, y, i, size):
    return mx.io.DataBatch([mx.nd.array(x[i * size:(i + 1) * size])],
                           [mx.nd.array(y[i * size:(i + 1) * size])])


def sgd_trajectory(mx, sym, x, y, size, grads, keep=lambda name, a: a):
    """A Module of `sym` with det_params, bound for `size` samples with input gradients:
    three SGD-momentum steps over x, y (probabilities "prob%d", input gradients "dx%d" and the
    gradients of the `grads` names "g_NAME_%d" of each), the parameters after them ("p_NAME")
    and an inference pass over the next batch ("eval"). `keep(key, array)` may cut an array
    down before it is stored."""
    dshape = (size,) + x.shape[1:]
    args, auxs = det_params(sym, data=dshape, softmax_label=(size,))
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.bind(data_shapes=[("data", dshape)], label_shapes=[("softmax_label", (size,))],
             inputs_need_grad=True)
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.05,
                                                          "momentum": 0.9})
    out = {}

    def put(key, arr):
        out[key] = keep(key, arr.asnumpy())

    for i in range(3):
        mod.forward_backward(batch(mx, x, y, i, size))
        put("prob%d" % i, mod.get_outputs()[0])
        put("dx%d" % i, mod.get_input_grads()[0])
        exe = mod._exec_group.execs[0]
        for name in grads:
            put("g_%s_%d" % (name, i), exe.grad_dict[name])
        mod.update()
    arg, _ = mod.get_params()
    for name in sorted(arg):
        put("p_%s" % name, arg[name])
    mod.forward(batch(mx, x, y, 3, size), is_train=False)
    put("eval", mod.get_outputs()[0])
    return out


def train_steps(mx, mod, batches, grads=(), prefix=""):
    """One forward_backward and update of the bound `mod` per DataBatch of `batches`, keeping
    for step i every output ("<prefix>out<j>_<i>"), the first input's gradient
    ("<prefix>dx<i>") and the gradients of the `grads` names ("<prefix>g_<name>_<i>"), then
    the parameters after them (`params_out`, prefix "<prefix>p")."""
    out = {}
    for i, data_batch in enumerate(batches):
        mod.forward_backward(data_batch)
        for j, o in enumerate(mod.get_outputs()):
            out["%sout%d_%d" % (prefix, j, i)] = o.asnumpy()
        out["%sdx%d" % (prefix, i)] = mod.get_input_grads()[0].asnumpy()
        exe = mod._exec_group.execs[0]
        for name in grads:
            out["%sg_%s_%d" % (prefix, name, i)] = exe.grad_dict[name].asnumpy()
        mod.update()
    out.update(params_out(mod, prefix + "p"))
    return out
