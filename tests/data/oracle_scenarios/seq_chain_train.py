"""SequentialModule of three Modules (auto_wiring, matching names, take_labels) trained with SGD
momentum: per-step outputs, the first module's input gradients, metric, final parameters."""
import numpy as np
from common import batches, to_nd


def _layers(mx):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=24, name="fc1")
    first = mx.sym.Activation(net, act_type="relu", name="relu1")
    feat = mx.sym.Variable("feat")  # renamed from relu1_output by auto_wiring
    net = mx.sym.FullyConnected(feat, num_hidden=16, name="fc2")
    second = mx.sym.Activation(net, act_type="tanh", name="tanh2")
    hidden = mx.sym.Variable("tanh2_output")  # wired by name, without auto_wiring
    net = mx.sym.FullyConnected(hidden, num_hidden=10, name="fc3")
    third = mx.sym.SoftmaxOutput(net, name="softmax")
    return first, second, third


def _params(shapes, seed):
    rng = np.random.RandomState(seed)
    return {name: rng.uniform(-0.3, 0.3, size=shape).astype(np.float32)
            for name, shape in sorted(shapes.items())}


def run(mx):
    first, second, third = _layers(mx)
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(first, data_names=("data",), label_names=None, context=mx.cpu()))
    seq.add(mx.mod.Module(second, data_names=("feat",), label_names=None, context=mx.cpu()),
            auto_wiring=True)
    seq.add(mx.mod.Module(third, data_names=("tanh2_output",), label_names=("softmax_label",),
                          context=mx.cpu()), take_labels=True)
    batch_size = 16
    seq.bind(data_shapes=[("data", (batch_size, 12))],
             label_shapes=[("softmax_label", (batch_size,))], inputs_need_grad=True)
    params = _params({"fc1_weight": (24, 12), "fc1_bias": (24,), "fc2_weight": (16, 24),
                      "fc2_bias": (16,), "fc3_weight": (10, 16), "fc3_bias": (10,)}, seed=3)
    seq.init_params(arg_params=to_nd(mx, params), aux_params={})
    seq.init_optimizer(optimizer="sgd",
                       optimizer_params={"learning_rate": 0.2, "momentum": 0.9, "wd": 1e-3})
    x, y = batches(5 * batch_size, batch_size, (12,), 10, seed=7)
    metric = mx.metric.create("acc")
    out = {}
    for i in range(5):
        part = slice(i * batch_size, (i + 1) * batch_size)
        batch = mx.io.DataBatch([mx.nd.array(x[part])], [mx.nd.array(y[part])])
        seq.forward(batch, is_train=True)
        out["prob%d" % i] = seq.get_outputs()[0].asnumpy()
        seq.backward()
        # MXNet's SequentialModule.get_input_grads always refuses: ask its first module
        out["dx%d" % i] = seq._modules[0].get_input_grads()[0].asnumpy()
        out["dfeat%d" % i] = seq._modules[1].get_input_grads()[0].asnumpy()
        seq.update()
        seq.update_metric(metric, batch.label)
    out["acc"] = metric.get()[1]
    arg_params, aux_params = seq.get_params()
    for name, value in sorted(arg_params.items()):
        out["arg_" + name] = value.asnumpy()
    out["n_aux"] = len(aux_params)
    out["output_shape"] = list(seq.output_shapes[0][1])
    out["output_names"] = ",".join(seq.output_names)
    out["data_names"] = ",".join(seq.data_names)
    out["label_shapes"] = str([(d[0], tuple(d[1])) for d in seq.label_shapes])
    out["mid_shapes"] = str([(d[0], tuple(d[1])) for d in seq._modules[1].data_shapes])
    # inference on a batch with no labels through the whole chain
    seq.forward(mx.io.DataBatch([mx.nd.array(x[:batch_size])]), is_train=False)
    out["prob_eval"] = seq.get_outputs()[0].asnumpy()
    return out
