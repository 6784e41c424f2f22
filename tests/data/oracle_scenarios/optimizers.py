"""Every optimizer through Module.update on an MLP (3 steps), with schedulers and multipliers."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import batch, data, det_params, mlp, params_out, to_nd  # noqa: E402

CONFIGS = [
    ("sgd", {"learning_rate": 0.1}),
    ("sgd_mom", ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01,
                         "clip_gradient": 0.05})),
    ("nag", {"learning_rate": 0.1, "momentum": 0.8, "wd": 0.001}),
    ("adam", {"learning_rate": 0.01, "wd": 0.001}),
    ("adagrad", {"learning_rate": 0.1}),
    ("rmsprop", {"learning_rate": 0.01}),
    ("rmsprop_centered", ("rmsprop", {"learning_rate": 0.01, "centered": True})),
    ("adadelta", {"rho": 0.9}),
    ("adamax", {"learning_rate": 0.02}),
    ("nadam", {"learning_rate": 0.02}),
    ("signum", {"learning_rate": 0.01, "wd_lh": 0.01}),
    ("ftrl", {"learning_rate": 0.1, "lamda1": 0.001}),
]


def run(mx):
    out = {}
    x, y = data(48, (6,), 4, seed=5)
    for tag, spec in CONFIGS:
        name, params = (spec if isinstance(spec, tuple) else (tag, spec))
        with mx.name.NameManager():
            sym = mlp(mx)
        args, auxs = det_params(sym, data=(8, 6), softmax_label=(8,))
        mod = mx.mod.Module(sym)
        mod.bind(data_shapes=[("data", (8, 6))], label_shapes=[("softmax_label", (8,))])
        mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
        mod.init_optimizer(optimizer=name, optimizer_params=dict(params))
        for i in range(3):
            mod.forward_backward(batch(mx, x, y, i, 8))
            mod.update()
        out.update(params_out(mod, tag))
    # a scheduler, and lr/wd multipliers from symbol attributes and from set_*_mult
    with mx.name.NameManager():
        data_sym = mx.sym.Variable("data")
        w = mx.sym.Variable("fc0_weight", lr_mult=0.5, wd_mult=2.0)
        net = mx.sym.FullyConnected(data_sym, weight=w, num_hidden=12, name="fc0")
        net = mx.sym.Activation(net, act_type="relu")
        net = mx.sym.FullyConnected(net, num_hidden=4, name="out")
        sym = mx.sym.SoftmaxOutput(net, name="softmax")
    args, auxs = det_params(sym, data=(8, 6), softmax_label=(8,))
    mod = mx.mod.Module(sym)
    mod.bind(data_shapes=[("data", (8, 6))], label_shapes=[("softmax_label", (8,))])
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=0.2)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"lr_scheduler": sched,
                                                          "momentum": 0.5, "wd": 0.01})
    mod._optimizer.set_lr_mult({"out_bias": 3.0})
    for i in range(5):
        mod.forward_backward(batch(mx, x, y, i % 6, 8))
        mod.update()
    out.update(params_out(mod, "sched"))
    return out
