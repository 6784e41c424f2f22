"""mx.sym.contrib.while_loop and cond bound with `bind` (the one way MXNet 1.9.1 runs them:
its shape inference cannot see through them, so simple_bind fails there): a loop whose stop
depends on a loop variable, started so that it runs three steps and one step of at most
five, with two stacked outputs and two loop variables, and a cond over two outputs taken
both ways; outputs, final loop variables and input gradients under weighted head gradients.
Of the stacked outputs only the rows of the steps run are compared: MXNet leaves the rest
unwritten (minimod gives zeros there)."""
import numpy as np


def _loop(mx):
    i, s = mx.sym.var("i"), mx.sym.var("s")
    outs, (count, final) = mx.sym.contrib.while_loop(
        lambda i, s: mx.sym.sum(i) < 3,
        lambda i, s: ([s * 2, mx.sym.sum(s, axis=0)], [i + 1, s * 0.5 + mx.sym.sin(s)]),
        [i, s], max_iterations=5)
    return mx.sym.Group(outs + [count, final])


def _cond(mx):
    x, w = mx.sym.var("x"), mx.sym.var("w")
    picked = mx.sym.contrib.cond(mx.sym.sum(x) > 0, lambda: [x * w, mx.sym.exp(x)],
                                 lambda: [x - w, x * 3])
    return mx.sym.Group(picked)


def run(mx):
    out = {}
    s0 = np.arange(4, dtype=np.float32).reshape(2, 2) * 0.3 + 0.2
    loop = _loop(mx)
    for start in (0, 2):
        exe = loop.bind(mx.cpu(), {"i": mx.nd.array([start]), "s": mx.nd.array(s0)},
                        args_grad={"i": mx.nd.zeros(1), "s": mx.nd.zeros((2, 2))})
        exe.forward(is_train=True)
        ran = 3 - start
        for k, o in enumerate(exe.outputs):
            value = o.asnumpy()
            out["loop%d_out%d" % (start, k)] = value[:ran] if k < 2 else value
        exe.backward([mx.nd.ones(o.shape) * (k + 1) for k, o in enumerate(exe.outputs)])
        out["loop%d_grad_s" % start] = exe.grad_dict["s"].asnumpy()
    picked = _cond(mx)
    for sign in (1, -1):
        x = (np.arange(6, dtype=np.float32).reshape(2, 3) * 0.1 + 0.05) * sign
        exe = picked.bind(mx.cpu(), {"x": mx.nd.array(x), "w": mx.nd.array(x + 1)},
                          args_grad={"x": mx.nd.zeros((2, 3)), "w": mx.nd.zeros((2, 3))})
        exe.forward(is_train=True)
        for k, o in enumerate(exe.outputs):
            out["cond%d_out%d" % (sign, k)] = o.asnumpy()
        exe.backward([mx.nd.ones((2, 3)), mx.nd.ones((2, 3)) * 2])
        out["cond%d_grad_x" % sign] = exe.grad_dict["x"].asnumpy()
        out["cond%d_grad_w" % sign] = exe.grad_dict["w"].asnumpy()
    return out
