"""A MobileNet-v2 built as MXNet's image-classification model zoo builds it (ReLU6 as
clip(x, 0, 6), depthwise 3x3 convolutions with num_group equal to the channels, BatchNorm with
fix_gamma=False, linear bottlenecks, residual elemwise_add), narrowed so that a float64 run is
quick. `build(mx)` and `run(mx, dtype)` work under MXNet 1.9.1 and under minimod."""
import numpy as np

# (expansion t, channels c, repeats n, first stride s) per stage
STAGES = [(1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 2, 2), (6, 24, 2, 1)]


def _unit(mx, data, nf, kernel, stride, pad, group, act, prefix):
    conv = mx.sym.Convolution(data=data, num_filter=nf, kernel=kernel, num_group=group,
                              stride=stride, pad=pad, no_bias=True, name=prefix + "-conv2d")
    bn = mx.sym.BatchNorm(data=conv, fix_gamma=False, eps=1e-5, name=prefix + "-batchnorm")
    return mx.sym.clip(bn, 0, 6, name=prefix + "-relu6") if act else bn


def _inverted_residual(mx, data, c_in, c_out, t, stride, prefix):
    e = c_in * t
    h = _unit(mx, data, e, (1, 1), (1, 1), (0, 0), 1, True, prefix + "-exp")
    h = _unit(mx, h, e, (3, 3), stride, (1, 1), e, True, prefix + "-depthwise")
    h = _unit(mx, h, c_out, (1, 1), (1, 1), (0, 0), 1, False, prefix + "-linear")
    if stride == (1, 1) and c_in == c_out:
        h = mx.sym.elemwise_add(data, h, name=prefix + "-shortcut")
    return h


def build(mx, classes=10):
    x = _unit(mx, mx.sym.Variable("data"), 16, (3, 3), (2, 2), (1, 1), 1, True, "first")
    c_in = 16
    for i, (t, c, n, s) in enumerate(STAGES):
        for j in range(n):
            stride = (s, s) if j == 0 else (1, 1)
            x = _inverted_residual(mx, x, c_in, c, t, stride, "seq-%d-block%d" % (i, j))
            c_in = c
    x = _unit(mx, x, 64, (1, 1), (1, 1), (0, 0), 1, True, "last")
    x = mx.sym.Pooling(data=x, kernel=(2, 2), pool_type="avg", global_pool=True, name="pool")
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=classes, name="fc")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def run(mx, dtype=np.float64) -> dict:
    """One training forward and backward at batch 4 on 32x32 inputs with seeded random
    weights: the softmax output and every argument's gradient."""
    net = build(mx)
    types = {k: dtype for k in net.list_arguments() + net.list_auxiliary_states()}
    exe = net.simple_bind(mx.cpu(), data=(4, 3, 32, 32), softmax_label=(4,), type_dict=types)
    rs = np.random.RandomState(0)
    for name in sorted(exe.arg_dict):
        arr = exe.arg_dict[name]
        if name == "softmax_label":
            value = rs.randint(0, 10, arr.shape)
        elif name.endswith("gamma"):
            value = rs.uniform(0.5, 1.5, arr.shape)
        elif name.endswith("beta"):
            value = rs.randn(*arr.shape) * 0.1
        else:
            value = rs.randn(*arr.shape) * np.sqrt(2.0 / np.prod(arr.shape[1:]))
        arr[:] = value
    for name in sorted(exe.aux_dict):
        exe.aux_dict[name][:] = 1 if name.endswith("var") else 0
    exe.forward(is_train=True)
    exe.backward()
    out = {"output": exe.outputs[0].asnumpy()}
    out.update({"grad:" + k: v.asnumpy() for k, v in exe.grad_dict.items() if v is not None})
    return out
