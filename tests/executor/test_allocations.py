"""A planned training step allocates no array once it has run once.

`minimod.testing.count_allocations` installs a counting allocator for NumPy's array buffers,
so these tests see every array any op, the executor, the optimizer or the kvstore creates,
however small (a ufunc's Python-number argument boxed into a 0-d array counts too).
"""
import numpy as np
import pytest

import minimod as mx
from minimod.testing import count_allocations


def test_count_allocations_sees_arrays_and_not_in_place_work():
    x = np.ones(10, dtype=np.float32)
    y = np.empty_like(x)
    with count_allocations() as made:
        np.add(x, x, out=y)
    assert made == []
    with count_allocations() as made:
        z = x * 2.0
    assert 40 in made and z.shape == (10,)
    with count_allocations() as made:
        np.multiply(x, 3.0, out=y)  # the Python float becomes a fresh 0-d array
    assert made.larger_than(16) == [] and len(made) >= 1


def _mlp():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=32, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax"), (16, 20), (16,)


def _lenet(act2="sigmoid"):
    net = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(5, 5), num_filter=6, name="c1")
    net = mx.sym.Activation(net, act_type="tanh", name="t1")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2), name="p1")
    net = mx.sym.Convolution(net, kernel=(3, 3), num_filter=8, pad=(1, 1), name="c2")
    net = mx.sym.Activation(net, act_type=act2, name="s2")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2), name="p2")
    net = mx.sym.FullyConnected(mx.sym.Flatten(net), num_hidden=10, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax"), (8, 1, 16, 16), (8,)


def _lstm(fused, mode="lstm", bidirectional=False):
    def build():
        embed = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=50, output_dim=12,
                                 name="embed")
        if fused:
            cell = mx.rnn.FusedRNNCell(8 if bidirectional else 16, num_layers=2, mode=mode,
                                       bidirectional=bidirectional, prefix="lstm_")
            outs, _ = cell.unroll(6, inputs=mx.sym.SwapAxis(embed, dim1=0, dim2=1),
                                  layout="TNC", merge_outputs=True)
            outs = mx.sym.SwapAxis(outs, dim1=0, dim2=1)
        else:
            cell = mx.rnn.LSTMCell(16, prefix="lstm_")
            outs, _ = cell.unroll(6, inputs=embed, layout="NTC", merge_outputs=True)
        pred = mx.sym.FullyConnected(mx.sym.Reshape(outs, shape=(-1, 16)), num_hidden=50,
                                     name="pred")
        label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
        return mx.sym.SoftmaxOutput(pred, label, name="softmax")
    return build(), (4, 6), (4, 6)


def _conv_bn():
    net = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=4, pad=(1, 1),
                             name="c1")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn1")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.FullyConnected(mx.sym.Flatten(net), num_hidden=10, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax"), (8, 2, 6, 6), (8,)


def _broadcast_heads():
    """Broadcast products summed back, sum / max reductions and a logistic regression head
    (the shapes of an NCE word model)."""
    data = mx.sym.Variable("data")                                   # (8, 3, 5)
    ctx = mx.sym.sum(mx.sym.FullyConnected(data, num_hidden=5, flatten=False, name="fc"),
                     axis=1, keepdims=True)                         # (8, 1, 5)
    scores = mx.sym.broadcast_mul(data, ctx)                         # (8, 3, 5)
    scores = mx.sym.sum(scores, axis=2) + mx.sym.max(scores, axis=2)
    return (mx.sym.LogisticRegressionOutput(scores, mx.sym.Variable("softmax_label")),
            (8, 3, 5), (8, 3))


# "lenet_fused": both activations fuse with their pooling, and the layout pass keeps every
# edge from c1 to p2 batch-last (with sigmoid, p2 stays a plain Pooling, batch-first)
NETS = {"mlp": _mlp, "lenet": _lenet, "lenet_fused": lambda: _lenet("tanh"),
        "lstm": lambda: _lstm(False),
        "lstm_fused": lambda: _lstm(True),
        # the RNN op's other modes (lstm_fused runs kernels/lstm_host.py, these the op itself)
        "lstm_fused_gru": lambda: _lstm(True, "gru", bidirectional=True),
        "lstm_fused_rnn_relu": lambda: _lstm(True, "rnn_relu"),
        "lstm_fused_rnn_tanh": lambda: _lstm(True, "rnn_tanh", bidirectional=True),
        "conv_bn": _conv_bn, "broadcast_heads": _broadcast_heads}


def _batch(data_shape, label_shape, seed, vocab=None):
    rng = np.random.RandomState(seed)
    if vocab:
        data = rng.randint(0, vocab, data_shape)
    else:
        data = rng.uniform(-1, 1, data_shape)
    label = rng.randint(0, vocab or 10, label_shape)
    return mx.io.DataBatch(data=[mx.nd.array(data)], label=[mx.nd.array(label)])


@pytest.mark.parametrize("net", sorted(NETS))
@pytest.mark.parametrize("contexts", [1, 2], ids=["1dev", "2dev"])
def test_module_training_step_allocates_nothing(net, contexts):
    # seeded: the fused activation-pooling recomputes (and allocates for) windows whose
    # entries tie within rounding, which depend on the initial weights
    mx.random.seed(0)
    sym, dshape, lshape = NETS[net]()
    vocab = 50 if net.startswith("lstm") else None
    mod = mx.mod.Module(sym, context=[mx.cpu(i) for i in range(contexts)])
    mod.bind(data_shapes=[("data", dshape)], label_shapes=[("softmax_label", lshape)])
    mod.init_params(initializer=mx.init.Xavier())
    mod.init_optimizer(kvstore="local", optimizer="sgd",
                       optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4})
    batches = [_batch(dshape, lshape, seed, vocab) for seed in range(3)]
    for batch in batches[:2]:  # the first steps fill the scratch cache and the states
        mod.forward_backward(batch)
        mod.update()
    with count_allocations() as made:
        mod.forward_backward(batches[2])
        mod.update()
    assert made == [], "a planned step allocated arrays of %s bytes" % made
    assert np.isfinite(mod.get_outputs()[0].asnumpy()).all()


def test_bucketing_module_step_allocates_nothing():
    def sym_gen(key):
        embed = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=30, output_dim=8,
                                 name="embed")
        cell = mx.rnn.LSTMCell(8, prefix="lstm_")
        outs, _ = cell.unroll(key, inputs=embed, layout="NTC", merge_outputs=True)
        pred = mx.sym.FullyConnected(mx.sym.Reshape(outs, shape=(-1, 8)), num_hidden=30,
                                     name="pred")
        label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
        return mx.sym.SoftmaxOutput(pred, label, name="softmax"), ("data",), ("softmax_label",)

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=5)
    mod.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4, 5))])
    mod.init_params(initializer=mx.init.Uniform(0.1))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1,
                                                          "momentum": 0.9})

    def batch(key, seed):
        rng = np.random.RandomState(seed)
        return mx.io.DataBatch(data=[mx.nd.array(rng.randint(0, 30, (4, key)))],
                               label=[mx.nd.array(rng.randint(0, 30, (4, key)))],
                               bucket_key=key,
                               provide_data=[mx.io.DataDesc("data", (4, key))],
                               provide_label=[mx.io.DataDesc("softmax_label", (4, key))])
    for key in (5, 3, 5, 3):
        mod.forward_backward(batch(key, key))
        mod.update()
    for key in (3, 5):
        data = batch(key, 7)
        with count_allocations() as made:
            mod.forward_backward(data)
            mod.update()
        assert made == [], "bucket %d allocated %s" % (key, made)
