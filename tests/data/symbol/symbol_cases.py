"""Symbol constructions run identically under MXNet 1.9.1 and minimod (`build(mx)` per case).

gen_symbol_golden.py records what MXNet makes of each case; tests/symbol/test_golden.py checks
that minimod makes the same: the JSON text, the listings, inferred shapes and types, internals.
"""
import numpy as np


def mlp(mx):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=7)
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="head")
    net = mx.sym.BatchNorm(net, name="bn", fix_gamma=False)
    return mx.sym.LinearRegressionOutput(net, name="lro"), {"data": (5, 4)}


def lenet(mx):
    data = mx.sym.Variable("data")
    c1 = mx.sym.Convolution(data, kernel=(5, 5), num_filter=6, name="conv1")
    a1 = mx.sym.Activation(c1, act_type="tanh", name="tanh1")
    p1 = mx.sym.Pooling(a1, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    c2 = mx.sym.Convolution(p1, kernel=(3, 3), num_filter=8, pad=(1, 1), name="conv2")
    b2 = mx.sym.BatchNorm(c2, fix_gamma=False, name="bn2")
    a2 = mx.sym.Activation(b2, act_type="relu", name="relu2")
    p2 = mx.sym.Pooling(a2, pool_type="avg", kernel=(2, 2), stride=(2, 2), name="pool2")
    f = mx.sym.Flatten(p2, name="flat")
    d = mx.sym.Dropout(f, p=0.3, name="drop")
    fc = mx.sym.FullyConnected(d, num_hidden=10, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax"), {"data": (4, 1, 16, 16)}


def arithmetic(mx):
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    expr = (a * 2 + b) / (b + 3) - a ** 2
    expr = 1 - expr + 2 / (abs(a) + 1) - (-b) * 0.5
    expr = mx.sym.maximum(expr, a) + mx.sym.minimum(b, 0.25) + (a > b) + (b <= 0.5)
    return expr, {"a": (2, 3), "b": (2, 3)}


def group_and_slices(mx):
    data = mx.sym.Variable("data")
    parts = mx.sym.SliceChannel(data, num_outputs=3, axis=1, name="split")
    cat = mx.sym.Concat(parts[2], parts[0], dim=1, name="cat")
    s = mx.sym.sum(parts[1], axis=1, keepdims=True, name="s")
    r = mx.sym.Reshape(cat, shape=(0, -1), name="r")
    t = mx.sym.transpose(r, name="t")
    e = mx.sym.expand_dims(s, axis=0, name="e")
    bd = mx.sym.broadcast_add(r, mx.sym.Variable("bias", shape=(1, 8)), name="bd")
    dot = mx.sym.dot(t, bd, name="dot")
    return mx.sym.Group([dot, e, mx.sym.BlockGrad(s, name="blk")]), {"data": (5, 12)}


def scopes_and_attrs(mx):
    with mx.name.Prefix("net_"):
        data = mx.sym.Variable("data")
        with mx.AttrScope(ctx_group="dev1"):
            fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc", attr={"lr_mult": "2"})
        w = mx.sym.Variable("w", shape=(3, 4), lr_mult=0.5, wd_mult=0.0, init=mx.init.One())
        out = mx.sym.FullyConnected(fc, weight=w, num_hidden=3, no_bias=True, name="out")
    return mx.sym.SoftmaxOutput(out, name="sm", normalization="batch"), {"data": (2, 6)}


def embedding_rnn_style(mx):
    data = mx.sym.Variable("data")
    emb = mx.sym.Embedding(data, input_dim=11, output_dim=4, name="emb")
    steps = mx.sym.SliceChannel(emb, num_outputs=3, axis=1, squeeze_axis=True, name="steps")
    h = mx.sym.zeros(shape=(0, 5))
    i2h_w = mx.sym.Variable("i2h_weight")
    h2h_w = mx.sym.Variable("h2h_weight")
    outs = []
    for t in range(3):
        i2h = mx.sym.FullyConnected(steps[t], weight=i2h_w, num_hidden=5, no_bias=True,
                                    name="i2h%d" % t)
        h2h = mx.sym.FullyConnected(h, weight=h2h_w, num_hidden=5, no_bias=True,
                                    name="h2h%d" % t)
        h = mx.sym.Activation(i2h + h2h, act_type="tanh", name="h%d" % t)
        outs.append(mx.sym.expand_dims(h, axis=1))
    seq = mx.sym.Concat(*outs, dim=1, name="seq")
    pred = mx.sym.FullyConnected(mx.sym.Reshape(seq, shape=(-3, 0)), num_hidden=11, name="pred")
    label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
    return mx.sym.SoftmaxOutput(pred, label, name="softmax"), {"data": (2, 3),
                                                               "softmax_label": (2, 3)}


def composed(mx):
    x = mx.sym.Variable("x")
    sub = mx.sym.FullyConnected(x, num_hidden=2, name="sub")
    data = mx.sym.Variable("data")
    net = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=6, name="pre"),
                            act_type="sigmoid", name="sig")
    return sub(x=net), {"data": (3, 5)}


CASES = {f.__name__: f for f in (mlp, lenet, arithmetic, group_and_slices, scopes_and_attrs,
                                 embedding_rnn_style, composed)}


def describe(mx, sym, shapes):
    """Everything about a symbol that two engines must agree on, as JSON-able values."""
    arg_shapes, out_shapes, aux_shapes = sym.infer_shape(**shapes)
    arg_types, out_types, aux_types = sym.infer_type(**{k: np.float32 for k in shapes})
    return {
        "json": sym.tojson(),
        "arguments": sym.list_arguments(),
        "outputs": sym.list_outputs(),
        "aux": sym.list_auxiliary_states(),
        "inputs": sym.list_inputs(),
        "arg_shapes": [list(s) for s in arg_shapes],
        "out_shapes": [list(s) for s in out_shapes],
        "aux_shapes": [list(s) for s in aux_shapes],
        "types": [np.dtype(t).name for t in arg_types + out_types + aux_types],
        "internals": sym.get_internals().list_outputs(),
        "attr_dict": sym.attr_dict(),
    }


def wide(mx):
    """More than ten inputs and heads: MXNet spreads those lists over lines."""
    parts = [mx.sym.Variable("v%d" % i) for i in range(11)]
    cat = mx.sym.Concat(*parts, dim=1, name="cat")
    heads = [cat] + [p * 2 for p in parts[:10]]
    return mx.sym.Group(heads), {"v%d" % i: (2, 1) for i in range(11)}


CASES["wide"] = wide
