"""PythonLossModule with a grad_func at the end of a SequentialModule: a softmax cross-entropy
gradient written in numpy (one device), an L2 gradient returned as an NDArray (two devices),
and fit/score/predict through the chain. Outputs, input gradients, metrics, parameters."""
import numpy as np
from common import batches, to_nd


def _softmax_ce_grad(scores, labels):
    s = scores.asnumpy().astype(np.float64)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    p[np.arange(len(p)), labels.asnumpy().astype(np.int64)] -= 1.0
    return p


def _l2_grad(scores, labels):
    return scores - labels.reshape((-1, 1))


def _body(mx, outputs):
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=20, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh1")
    return mx.sym.FullyConnected(net, num_hidden=outputs, name="fc2")


def _params(outputs, seed):
    rng = np.random.RandomState(seed)
    shapes = {"fc1_weight": (20, 8), "fc1_bias": (20,), "fc2_weight": (outputs, 20),
              "fc2_bias": (outputs,)}
    return {k: rng.uniform(-0.4, 0.4, size=s).astype(np.float32) for k, s in sorted(shapes.items())}


def _chain(mx, outputs, loss, context):
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(_body(mx, outputs), label_names=None, context=context))
    seq.add(loss, take_labels=True, auto_wiring=True)
    return seq


def _classify(mx, out):
    seq = _chain(mx, 5, mx.mod.PythonLossModule(grad_func=_softmax_ce_grad), mx.cpu())
    seq.bind(data_shapes=[("data", (12, 8))], label_shapes=[("softmax_label", (12,))],
             inputs_need_grad=True)
    seq.init_params(arg_params=to_nd(mx, _params(5, 11)))
    seq.init_optimizer(optimizer="sgd",
                       optimizer_params={"learning_rate": 0.05, "momentum": 0.9, "wd": 1e-4})
    x, y = batches(48, 12, (8,), 5, seed=12)
    metric = mx.metric.create("acc")
    for i in range(4):
        part = slice(i * 12, (i + 1) * 12)
        batch = mx.io.DataBatch([mx.nd.array(x[part])], [mx.nd.array(y[part])])
        seq.forward(batch, is_train=True)
        out["ce_scores%d" % i] = seq.get_outputs()[0].asnumpy()
        seq.backward()
        out["ce_dscores%d" % i] = seq._modules[1].get_input_grads()[0].asnumpy()
        out["ce_dx%d" % i] = seq._modules[0].get_input_grads()[0].asnumpy()
        seq.update()
        seq.update_metric(metric, batch.label)
    out["ce_acc"] = metric.get()[1]
    for name, value in sorted(seq.get_params()[0].items()):
        out["ce_arg_" + name] = value.asnumpy()
    out["ce_output_names"] = ",".join(seq.output_names)
    out["ce_output_shape"] = list(seq.output_shapes[0][1])


def _regress(mx, out):
    loss = mx.mod.PythonLossModule(name="l2", label_names=("target",), grad_func=_l2_grad)
    seq = _chain(mx, 1, loss, [mx.cpu(0), mx.cpu(1)])
    seq.bind(data_shapes=[("data", (10, 8))], label_shapes=[("target", (10,))])
    seq.init_params(arg_params=to_nd(mx, _params(1, 21)))
    seq.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.02, "momentum": 0.5})
    rng = np.random.RandomState(22)
    x = rng.uniform(-1, 1, size=(30, 8)).astype(np.float32)
    t = (x[:, :3].sum(axis=1) * 0.5).astype(np.float32)
    metric = mx.metric.create("mse")
    for i in range(3):
        part = slice(i * 10, (i + 1) * 10)
        batch = mx.io.DataBatch([mx.nd.array(x[part])], [mx.nd.array(t[part])])
        seq.forward_backward(batch)
        out["l2_pred%d" % i] = seq.get_outputs()[0].asnumpy()
        out["l2_dpred%d" % i] = seq._modules[1].get_input_grads()[0].asnumpy()
        seq.update()
        seq.update_metric(metric, batch.label)
    out["l2_mse"] = metric.get()[1]
    for name, value in sorted(seq.get_params()[0].items()):
        out["l2_arg_" + name] = value.asnumpy()
    out["l2_output_names"] = ",".join(seq.output_names)


def _fit(mx, out):
    seq = _chain(mx, 5, mx.mod.PythonLossModule(grad_func=_softmax_ce_grad), mx.cpu())
    x, y = batches(40, 10, (8,), 5, seed=31)
    train = mx.io.NDArrayIter(x, y, batch_size=10, shuffle=False)
    seq.fit(train, num_epoch=2, eval_metric="acc", arg_params=to_nd(mx, _params(5, 32)),
            optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    for name, value in sorted(seq.get_params()[0].items()):
        out["fit_arg_" + name] = value.asnumpy()
    evaluation = mx.io.NDArrayIter(x[:20], y[:20], batch_size=10, shuffle=False)
    out["fit_score"] = [v for _, v in seq.score(evaluation, "acc")]
    out["fit_predict"] = seq.predict(evaluation).asnumpy()


def run(mx):
    out = {}
    _classify(mx, out)
    _regress(mx, out)
    _fit(mx, out)
    return out
