"""Module options: fixed_param_names, work_load_list, inputs_need_grad, grad_req='add',
shared_module + borrow_optimizer, reshape, forward with a list of batches and with new batch
sizes, predict on an array, state_names with get/set_states, score/predict over an iterator."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import batch, data, det_params, mlp, params_out, to_nd  # noqa: E402


def _module(mx, sym, ctx=None, **kwargs):
    args, auxs = det_params(sym, data=(8, 6), softmax_label=(8,))
    mod = mx.mod.Module(sym, context=ctx or mx.cpu(), **kwargs)
    return mod, args, auxs


def run(mx):
    out = {}
    x, y = data(64, (6,), 4, seed=2)
    with mx.name.NameManager():
        sym = mlp(mx, hidden=(10,))
    # fixed params + uneven workload over 3 devices + inputs_need_grad
    mod, args, auxs = _module(mx, sym, ctx=[mx.cpu(0), mx.cpu(1), mx.cpu(2)],
                              work_load_list=[1, 2, 1],
                              # fixing fc0_weight alone hits an MXNet bug: its FullyConnected
                              # backward then gives the bias a zero gradient too
                              fixed_param_names=["fc0_weight", "fc0_bias"])
    mod.bind(data_shapes=[("data", (8, 6))], label_shapes=[("softmax_label", (8,))],
             inputs_need_grad=True)
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.3})
    for i in range(3):
        mod.forward_backward(batch(mx, x, y, i, 8))
        out["fixed_dx%d" % i] = mod.get_input_grads()[0].asnumpy()
        mod.update()
    out.update(params_out(mod, "fixed"))
    out["fixed_output_shapes"] = list(mod.output_shapes[0][1])
    # grad_req='add' accumulates over two backward passes
    mod, args, auxs = _module(mx, sym)
    mod.bind(data_shapes=[("data", (8, 6))], label_shapes=[("softmax_label", (8,))],
             grad_req="add")
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    for arr in mod._exec_group.grad_arrays:
        arr[0][:] = 0
    for i in range(2):
        mod.forward_backward(batch(mx, x, y, i, 8))
    out["add_grad_out_weight"] = mod._exec_group.grad_arrays[2][0].asnumpy()
    # shared_module: a second module with another batch size shares params and optimizer
    mod, args, auxs = _module(mx, sym)
    mod.bind(data_shapes=[("data", (8, 6))], label_shapes=[("softmax_label", (8,))])
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.2, "momentum": 0.9})
    small = mx.mod.Module(sym)
    small.bind(data_shapes=[("data", (4, 6))], label_shapes=[("softmax_label", (4,))],
               shared_module=mod)
    for i in range(3):
        mod.forward_backward(batch(mx, x, y, i, 8))
        mod.update()
        small.forward_backward(batch(mx, x, y, 6 + i, 4))
        small.update()
    out.update(params_out(mod, "shared"))
    # reshape, then forward batches of other sizes, with and without labels
    mod.reshape(data_shapes=[("data", (5, 6))], label_shapes=[("softmax_label", (5,))])
    mod.forward(batch(mx, x, y, 3, 5), is_train=False)
    out["reshape5"] = mod.get_outputs()[0].asnumpy()
    mod.forward(batch(mx, x, y, 1, 12), is_train=True)
    out["new_size12"] = mod.get_outputs()[0].asnumpy()
    # forward with a list of pre-sliced batches on two devices
    mod2, args, auxs = _module(mx, sym, ctx=[mx.cpu(0), mx.cpu(1)])
    mod2.bind(data_shapes=[("data", (8, 6))], label_shapes=[("softmax_label", (8,))])
    mod2.set_params(to_nd(mx, args), to_nd(mx, auxs))
    mod2.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.2})
    parts = [batch(mx, x, y, 0, 4), batch(mx, x, y, 1, 4)]
    mod2.forward(parts, is_train=True)
    mod2.backward()
    mod2.update()
    metric = mx.metric.create("acc")
    mod2.update_metric(metric, [p.label for p in parts], pre_sliced=True)
    out["presliced_acc"] = metric.get()[1]
    out.update(params_out(mod2, "presliced"))
    # score and predict over an iterator with a padded last batch
    it = mx.io.NDArrayIter(x[:30], y[:30], batch_size=8, last_batch_handle="pad")
    out["score_ce"] = mod2.score(it, mx.metric.CrossEntropy())[0][1]
    out["predict_iter"] = mod2.predict(it).asnumpy()
    # state_names: a state input set through set_states
    with mx.name.NameManager():
        d = mx.sym.Variable("data")
        s = mx.sym.Variable("state")
        net = mx.sym.FullyConnected(d, num_hidden=3, name="fc") + s
        ssym = mx.sym.MakeLoss(mx.sym.sum(net * net), name="loss")
    smod = mx.mod.Module(ssym, data_names=["data"], label_names=None, state_names=["state"])
    smod.bind(data_shapes=[("data", (4, 6))])
    rng = np.random.RandomState(9)
    smod.set_params({"fc_weight": mx.nd.array(rng.rand(3, 6)),
                     "fc_bias": mx.nd.array(rng.rand(3))}, {})
    smod.set_states(value=0.5)
    smod.forward(mx.io.DataBatch([mx.nd.array(x[:4])], None), is_train=False)
    out["state_value"] = smod.get_outputs()[0].asnumpy()
    smod.set_states(states=[[mx.nd.array(rng.rand(4, 3))]])
    smod.forward(mx.io.DataBatch([mx.nd.array(x[:4])], None), is_train=False)
    out["state_array"] = smod.get_outputs()[0].asnumpy()
    out["state_get"] = smod.get_states(merge_multi_context=False)[0][0].asnumpy()
    return out
