"""Activations whose output the user changes in place between forward and backward (stochastic
depth adds into the arrays get_outputs() returns): `run(mx)` gives each one's data gradient,
under MXNet 1.9.1 or minimod. gen_activation_inplace.py writes MXNet's, from both of its
builds (oneDNN, the default wheel, and its reference kernels), into activation_inplace.json."""
import numpy as np

X = np.linspace(-2, 2, 12).reshape(3, 4).astype("float32")
CASES = [("Activation", a) for a in ("relu", "sigmoid", "tanh", "softrelu", "softsign")]
CASES += [("LeakyReLU", a) for a in ("leaky", "elu", "selu", "gelu")]


def run(mx) -> dict:
    res = {}
    for op, act in CASES:
        d = mx.sym.var("d")
        exe = getattr(mx.sym, op)(d, act_type=act).simple_bind(mx.cpu(), d=X.shape)
        exe.arg_dict["d"][:] = X
        exe.forward(is_train=True)
        out = exe.outputs[0]
        out[:] = out - 1.5
        exe.backward(mx.nd.ones(X.shape))
        res["%s_%s" % (op, act)] = exe.grad_dict["d"].asnumpy().tolist()
    return res
