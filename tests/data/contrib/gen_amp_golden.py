"""Write amp_golden.npz: symbols converted by MXNet 1.9.1's `amp.convert_symbol` /
`amp.convert_model`, and what the converted networks compute.

Run with an MXNet 1.9.1 environment (not needed by the tests):
    MXNET_MKLDNN_ENABLED=0 OMP_NUM_THREADS=1 python tests/data/contrib/gen_amp_golden.py

Per case: `<case>/sym` the original symbol's JSON, `<case>/kwargs` the conversion's keyword
arguments (JSON), `<case>/conv` the converted symbol's JSON with its casts
(`tojson(remove_amp_cast=False)`) and `<case>/conv_removed` MXNet's default `tojson()` of it
(casts removed). Cases that run also store `<case>/in:<name>` (inputs and parameters),
`<case>/out_fp32:<i>` the original network's outputs computed by MXNet on the CPU (inference
forward; MXNet's CPU kernels refuse float16 FullyConnected, so the converted networks are not
run here). convert_model cases
store `<case>/dtype:<name>`, the dtype of every returned parameter.
"""
import json
import os

os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet.contrib import amp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
rs = np.random.RandomState(3)
sym = mx.sym


def mlp():
    data = sym.var("data")
    fc1 = sym.FullyConnected(data, num_hidden=16, name="fc1")
    act = sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = sym.FullyConnected(act, num_hidden=5, name="fc2")
    return sym.SoftmaxOutput(fc2, name="softmax"), {"data": (4, 10)}


def convnet(batchnorm=True):
    data = sym.var("data")
    c1 = sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, name="conv1")
    bn = sym.BatchNorm(c1, fix_gamma=False, name="bn1") if batchnorm else c1
    r1 = sym.Activation(bn, act_type="relu", name="relu1")
    p1 = sym.Pooling(r1, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    c2 = sym.Convolution(p1, kernel=(1, 1), num_filter=4, name="conv2")
    res = sym.elemwise_add(c2, p1, name="res")
    sr = sym.Activation(res, act_type="softrelu", name="srelu")
    parts = sym.SliceChannel(sr, num_outputs=2, name="slice")
    c3 = sym.Convolution(parts[1], kernel=(1, 1), num_filter=2, name="conv3")
    cat = sym.Concat(parts[0], c3, dim=1, name="cat")
    elu = sym.LeakyReLU(cat, act_type="elu", slope=0.3, name="elu")
    flat = sym.Flatten(elu, name="flat")
    drop = sym.Dropout(flat, p=0.5, name="drop")
    fc = sym.FullyConnected(drop, num_hidden=6, name="fc")
    return sym.SoftmaxOutput(fc, name="softmax"), {"data": (2, 3, 8, 8)}


def heads():
    a, b, data = sym.var("a"), sym.var("b"), sym.var("data")
    fc = sym.FullyConnected(a + b, num_hidden=3, name="fc")
    fc2 = sym.FullyConnected(data, num_hidden=3, name="fc2")
    both = sym.broadcast_mul(fc, fc2, name="bmul")
    e = sym.exp(fc2, name="e")
    return sym.Group([fc, sym.relu(fc2, name="r"), both, e, sym.softmax(both, name="sm")]), \
        {"a": (2, 4), "b": (2, 4), "data": (2, 5)}


def dot_net():
    x, w = sym.var("x"), sym.var("w")
    d = sym.dot(x, w, name="d")
    fc = sym.FullyConnected(d, num_hidden=2, name="fc")
    m = sym.mean(fc, axis=1, name="m")
    return sym.Group([m, sym.dot(fc, fc, transpose_b=True, name="gram")]), \
        {"x": (3, 4), "w": (4, 5)}


def embed_net():
    data = sym.var("data")
    emb = sym.Embedding(data, input_dim=10, output_dim=4, name="emb")
    fc = sym.FullyConnected(emb, num_hidden=3, flatten=True, name="fc")
    return sym.LinearRegressionOutput(fc, name="lro"), {"data": (5, 2)}


def rnn_net():
    data = sym.var("data")
    out = sym.RNN(data, sym.var("rnn_params"), sym.var("rnn_state"),
                  sym.var("rnn_state_cell"), mode="lstm", state_size=4, num_layers=1,
                  name="rnn")
    fc = sym.FullyConnected(out, num_hidden=2, flatten=False, name="fc")
    return fc, None


def model_net():
    data = sym.var("data")
    c1 = sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv1")
    bn = sym.BatchNorm(c1, name="bn1")
    fc = sym.FullyConnected(bn, num_hidden=3, name="fc")
    return sym.SoftmaxOutput(fc, name="softmax"), {"data": (2, 1, 6, 6)}


def lstm_net():
    cell = mx.rnn.LSTMCell(num_hidden=4, prefix="lstm_")
    outputs, _ = cell.unroll(3, inputs=sym.var("data"), merge_outputs=True, layout="NTC")
    pred = sym.FullyConnected(sym.Reshape(outputs, shape=(-1, 4)), num_hidden=5, name="pred")
    return sym.SoftmaxOutput(pred, name="softmax"), {"data": (2, 3, 6)}


def edge_net():
    x, w = sym.var("x"), sym.var("w", shape=(3, 4))
    fc = sym.FullyConnected(x, w, no_bias=True, num_hidden=3, name="fc")
    sq = sym.elemwise_mul(fc, fc, name="sq")
    parts = sym.split(sym.Activation(sq, act_type="sigmoid", name="sg"), num_outputs=3, axis=1,
                      name="sp")
    bn = sym.BatchNorm(parts[2], output_mean_var=True, name="bn")
    shared = sym.broadcast_add(w, w, name="ww")
    return sym.Group([x, sq, parts[0], parts[1], bn[0], bn[1], shared, sym.exp(x, name="ex")]), \
        None


# name: (network, convert_symbol kwargs or None for convert_model, convert_model kwargs)
CASES = {
    "mlp": (mlp, {}, None),
    "convnet": (convnet, {}, None),
    "convnet_plain": (lambda: convnet(batchnorm=False), {}, None),
    "heads": (heads, {}, None),
    "heads_excluded": (heads, {"excluded_sym_names": ["fc", "r"]}, None),
    "heads_data_names": (heads, {"data_names": ["data"]}, None),
    "heads_custom_lists": (heads, {"target_dtype_ops": ["FullyConnected", "relu"],
                                   "fp32_ops": ["softmax"],
                                   "conditional_fp32_ops": []}, None),
    "dot": (dot_net, {}, None),
    "embed": (embed_net, {}, None),
    "rnn": (rnn_net, {}, None),
    "lstm": (lstm_net, {}, None),
    "edge": (edge_net, {}, None),
    "edge_optional": (edge_net, {"cast_optional_params": True, "data_names": ["x"]}, None),
    "model": (model_net, None, {}),
    "model_optional": (model_net, None, {"cast_optional_params": True}),
    "model_excluded": (model_net, None, {"excluded_sym_names": ["conv1"],
                                         "cast_optional_params": True}),
}


def random_inputs(net, shapes):
    arg_shapes, _, aux_shapes = net.infer_shape(**shapes)
    args = {}
    for name, shape in zip(net.list_arguments(), arg_shapes):
        if name == "data" and shape == (5, 2):  # embedding indices
            args[name] = rs.randint(0, 10, shape).astype("float32")
        elif name.endswith("label"):
            args[name] = rs.randint(0, 3, shape).astype("float32")
        else:
            args[name] = rs.uniform(-1, 1, shape).astype("float32")
    aux = {}
    for name, shape in zip(net.list_auxiliary_states(), aux_shapes):
        aux[name] = (rs.uniform(0.5, 1.5, shape) if "var" in name
                     else rs.uniform(-0.1, 0.1, shape)).astype("float32")
    return args, aux


def run(net, args, aux):
    arrays = {}
    for name, value in args.items():
        arrays[name] = mx.nd.array(value, dtype=value.dtype)
    exe = net.bind(mx.cpu(), args=arrays,
                   aux_states={k: mx.nd.array(v, dtype=v.dtype) for k, v in aux.items()},
                   grad_req="null")
    return [o.asnumpy() for o in exe.forward(is_train=False)]


def main():
    out = {}
    for case, (make, conv_kwargs, model_kwargs) in CASES.items():
        net, shapes = make()
        out[case + "/sym"] = np.array(net.tojson())
        if model_kwargs is None:
            out[case + "/kwargs"] = np.array(json.dumps(conv_kwargs))
            conv = amp.convert_symbol(net, **conv_kwargs)
        else:
            out[case + "/kwargs"] = np.array(json.dumps(dict(model_kwargs, model=True)))
            args, aux = random_inputs(net, shapes)
            params = {k: mx.nd.array(v) for k, v in args.items()
                      if k not in ("data", "softmax_label")}
            conv, cargs, caux = amp.convert_model(
                net, params, {k: mx.nd.array(v) for k, v in aux.items()}, **model_kwargs)
            for name, value in list(cargs.items()) + list(caux.items()):
                out["%s/dtype:%s" % (case, name)] = np.array(np.dtype(value.dtype).name)
        out[case + "/conv"] = np.array(conv.tojson(remove_amp_cast=False))
        out[case + "/conv_removed"] = np.array(conv.tojson())
        if shapes is None:
            continue
        args, aux = random_inputs(net, shapes)
        for name, value in list(args.items()) + list(aux.items()):
            out["%s/in:%s" % (case, name)] = value
        for i, value in enumerate(run(net, args, aux)):
            out["%s/out_fp32:%d" % (case, i)] = value
        print(case, [n["op"] for n in json.loads(conv.tojson(remove_amp_cast=False))["nodes"]
                     if n["op"].startswith("amp")].count("amp_cast"), "casts")
    np.savez_compressed(os.path.join(HERE, "amp_golden.npz"), **out)


if __name__ == "__main__":
    main()
