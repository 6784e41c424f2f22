"""Model parallelism: a network whose layers carry ctx_group attributes, placed by group2ctx on
three CPU devices, trained 3 steps through a Module (group2ctxs) and through a bare executor
(simple_bind with group2ctx and grad_req 'add' for the parameters); a BatchNorm in one group
keeps its aux states there. Outputs, input gradients, parameters and aux states."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import batch, det_params, to_nd, train_steps  # noqa: E402


def _net(mx):
    # the inputs inside the groups: MXNet 1.9.1 refuses a variable of no group that has a
    # gradient feeding a grouped node (docs/model-parallel.md)
    with mx.AttrScope(ctx_group="stage1"):
        data = mx.sym.Variable("data")
        h = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
        h = mx.sym.BatchNorm(mx.sym.Reshape(h, shape=(0, 8, 1, 1)), fix_gamma=False, name="bn")
        h = mx.sym.Activation(mx.sym.Flatten(h), act_type="relu")
    with mx.AttrScope(ctx_group="stage2"):
        label = mx.sym.Variable("softmax_label")
        h = mx.sym.FullyConnected(h, num_hidden=4, name="fc2")
        out = mx.sym.SoftmaxOutput(h, label, name="softmax")
    return out


def run(mx):
    out = {}
    rng = np.random.RandomState(59)
    x = rng.uniform(-1, 1, size=(18, 5)).astype(np.float32)
    y = rng.randint(0, 4, size=(18,)).astype(np.float32)
    with mx.name.NameManager():
        sym = _net(mx)
    args, auxs = det_params(sym, scale=0.5, data=(6, 5), softmax_label=(6,))
    groups = {"stage1": mx.cpu(1), "stage2": mx.cpu(2)}
    mod = mx.mod.Module(sym, context=mx.cpu(0), group2ctxs=[groups])
    mod.bind(data_shapes=[("data", (6, 5))], label_shapes=[("softmax_label", (6,))],
             inputs_need_grad=True)
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1,
                                                          "momentum": 0.9})
    out.update(train_steps(mx, mod, [batch(mx, x, y, i, 6) for i in range(3)], prefix="mod_"))
    reqs = {name: "add" for name in args}
    reqs.update(data="null", softmax_label="null")
    exe = sym.simple_bind(mx.cpu(0), group2ctx=groups, grad_req=reqs, data=(6, 5),
                          softmax_label=(6,))
    exe.copy_params_from(to_nd(mx, args), to_nd(mx, auxs))
    for i in range(2):
        exe.forward(is_train=True, data=mx.nd.array(x[:6]), softmax_label=mx.nd.array(y[:6]))
        exe.backward()
    out["exe_prob"] = exe.outputs[0].asnumpy()
    for name in ("fc1_weight", "bn_gamma", "fc2_weight"):
        out["exe_g_" + name] = exe.grad_dict[name].asnumpy()
    out["exe_a_bn_moving_mean"] = exe.aux_dict["bn_moving_mean"].asnumpy()
    return out
