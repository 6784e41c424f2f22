"""The fine-tuning recipe of MXNet's tutorials: a conv net trained two steps and checkpointed,
loaded back with mx.model.load_checkpoint, cut at an internal output (get_internals), given a
new head whose weight carries lr_mult / wd_mult attributes, and trained three steps from the
old parameters plus the new head's (init_params with allow_missing and allow_extra, the
dropped layer's parameters being extra) with the first convolution frozen
(fixed_param_names); then the features of the cut graph from a second Module bound for
inference sharing nothing, and the old head's parameters untouched."""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import batch, conv_bn, data, det_params, params_out, to_nd  # noqa: E402

SIZE = 6


def _pretrain(mx, x, y, prefix):
    sym = conv_bn(mx)
    shape = (SIZE,) + x.shape[1:]
    args, auxs = det_params(sym, data=shape, softmax_label=(SIZE,))
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.bind(data_shapes=[("data", shape)], label_shapes=[("softmax_label", (SIZE,))])
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1,
                                                          "momentum": 0.9})
    for i in range(2):
        mod.forward_backward(batch(mx, x, y, i, SIZE))
        mod.update()
    mod.save_checkpoint(prefix, 2)


def _new_head(mx, body):
    weight = mx.sym.Variable("head_weight", lr_mult=2.0, wd_mult=0.0)
    head = mx.sym.FullyConnected(mx.sym.Flatten(body), weight=weight, num_hidden=3,
                                 name="head")
    return mx.sym.SoftmaxOutput(head, name="softmax")


def run(mx):
    x, y = data(6 * SIZE, (2, 6, 6), 5, seed=5)
    y3 = np.mod(y, 3)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "pre")
        _pretrain(mx, x, y, prefix)
        sym, arg_params, aux_params = mx.model.load_checkpoint(prefix, 2)
    body = sym.get_internals()["tanh2_output"]
    net = _new_head(mx, body)
    shape = (SIZE,) + x.shape[1:]
    mod = mx.mod.Module(net, context=mx.cpu(), fixed_param_names=["conv1_weight",
                                                                   "conv1_bias"])
    mod.bind(data_shapes=[("data", shape)], label_shapes=[("softmax_label", (SIZE,))])
    rng = np.random.RandomState(3)
    head = {"head_weight": mx.nd.array(rng.uniform(-0.3, 0.3, (3, 24))),
            "head_bias": mx.nd.zeros((3,))}
    mod.init_params(initializer=mx.init.Zero(), arg_params=dict(arg_params, **head),
                    aux_params=aux_params, allow_missing=True, allow_extra=True)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.05,
                                                          "momentum": 0.9, "wd": 0.01})
    for i in range(3):
        mod.forward_backward(batch(mx, x, y3, 2 + i, SIZE))
        out["prob%d" % i] = mod.get_outputs()[0].asnumpy()
        mod.update()
    out.update(params_out(mod, "p"))
    features = mx.mod.Module(body, label_names=None, context=mx.cpu())
    features.bind(data_shapes=[("data", shape)], for_training=False)
    arg, aux = mod.get_params()
    features.set_params(arg, aux, allow_extra=True)
    features.forward(batch(mx, x, y3, 5, SIZE), is_train=False)
    out["features"] = features.get_outputs()[0].asnumpy()
    out["old_fc_weight"] = arg_params["fc_weight"].asnumpy()
    out["arg_names"] = " ".join(sorted(arg))
    return out
