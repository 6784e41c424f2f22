"""Every loss head MXNet's symbolic API offers, each trained 2 SGD steps on one MLP body with
the input gradients: LinearRegressionOutput, LogisticRegressionOutput, MAERegressionOutput
(with grad_scale), SVMOutput (L1 and squared hinge, margin and regularization_coefficient),
MakeLoss with normalization 'null' / 'batch' / 'valid' and valid_thresh, SoftmaxOutput with
preserve_shape, label smoothing and normalization 'batch', and softmax_cross_entropy +
MakeLoss; then a Group of two heads over a shared body."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import det_params, to_nd  # noqa: E402

N, D, K = 6, 5, 4


def _body(mx):
    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=8, name="fc1"),
                          act_type="tanh")
    return mx.sym.FullyConnected(h, num_hidden=K, name="fc2")


def _heads(mx):
    label = mx.sym.Variable("label")
    return {
        "linear": lambda b: mx.sym.LinearRegressionOutput(b, label, name="lro"),
        "logistic": lambda b: mx.sym.LogisticRegressionOutput(b, label, name="lgo"),
        "mae": lambda b: mx.sym.MAERegressionOutput(b, label, grad_scale=0.5, name="mae"),
        "svm_l1": lambda b: mx.sym.SVMOutput(b, label, margin=0.5, use_linear=True,
                                             regularization_coefficient=2.0, name="svm"),
        "svm_l2": lambda b: mx.sym.SVMOutput(b, label, margin=1.5, name="svm"),
        "makeloss_null": lambda b: mx.sym.MakeLoss(mx.sym.square(b - label), name="ml"),
        "makeloss_batch": lambda b: mx.sym.MakeLoss(mx.sym.square(b - label), grad_scale=2.0,
                                                    normalization="batch", name="ml"),
        "makeloss_valid": lambda b: mx.sym.MakeLoss(mx.sym.relu(b - label),
                                                    normalization="valid", valid_thresh=0.05,
                                                    name="ml"),
        "softmax_shape": lambda b: mx.sym.SoftmaxOutput(
            mx.sym.Reshape(b, shape=(0, 2, 2)), label,
            preserve_shape=True, smooth_alpha=0.1, normalization="batch", name="sm"),
        "xent": lambda b: mx.sym.MakeLoss(mx.sym.softmax_cross_entropy(
            b, mx.sym.argmax(label, axis=1)), name="xent"),
    }


def _labels(tag, rng):
    if tag.startswith("svm") or tag == "xent":
        return rng.randint(0, K, size=(N,)).astype(np.float32) if tag != "xent" else \
            np.eye(K, dtype=np.float32)[rng.randint(0, K, size=(N,))]
    if tag == "softmax_shape":
        return rng.randint(0, 2, size=(N, 2)).astype(np.float32)
    if tag == "logistic":
        return (rng.uniform(0, 1, size=(N, K)) > 0.5).astype(np.float32)
    return rng.uniform(-1, 1, size=(N, K)).astype(np.float32)


def _train(mx, sym, x, labels, tag, out):
    lshape = labels[0].shape
    args, auxs = det_params(sym, scale=0.4, data=(N, D), label=lshape)
    mod = mx.mod.Module(sym, data_names=["data"], label_names=["label"], context=mx.cpu())
    mod.bind(data_shapes=[("data", (N, D))], label_shapes=[("label", lshape)],
             inputs_need_grad=True)
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    for i, lab in enumerate(labels):
        mod.forward_backward(mx.io.DataBatch([mx.nd.array(x[i])], [mx.nd.array(lab)]))
        for j, o in enumerate(mod.get_outputs()):
            out["%s/out%d_%d" % (tag, j, i)] = o.asnumpy()
        out["%s/dx%d" % (tag, i)] = mod.get_input_grads()[0].asnumpy()
        mod.update()
    arg, _ = mod.get_params()
    out["%s/fc1_weight" % tag] = arg["fc1_weight"].asnumpy()


def run(mx):
    out = {}
    rng = np.random.RandomState(17)
    x = rng.uniform(-1, 1, size=(2, N, D)).astype(np.float32)
    for tag, head in _heads(mx).items():
        with mx.name.NameManager():
            sym = head(_body(mx))
        labels = [_labels(tag, rng) for _ in range(2)]
        if sym.list_arguments()[-1] != "label":  # a head without a label input of its own
            sym = mx.sym.Group([sym, mx.sym.BlockGrad(mx.sym.Variable("label"))])
        _train(mx, sym, x, labels, tag, out)
    with mx.name.NameManager():
        body = _body(mx)
        label = mx.sym.Variable("label")
        both = mx.sym.Group([mx.sym.LinearRegressionOutput(body, label, name="lro"),
                             mx.sym.MakeLoss(mx.sym.mean(mx.sym.abs(body)), grad_scale=0.3,
                                             name="l1")])
    _train(mx, both, x, [_labels("linear", rng) for _ in range(2)], "group", out)
    return out
