"""Graphs shared by the pass and executor tests: an MLP, a LeNet-style convnet, an unrolled LSTM;
the fusion and layout passes' convnet, and binding and monitoring helpers."""
import numpy as np

import minimod as mx


def mlp():
    net = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(net, num_hidden=16, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=12, name="fc2")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh2")
    net = mx.sym.FullyConnected(net, num_hidden=5, name="fc3")
    return mx.sym.SoftmaxOutput(net, name="softmax"), {"data": (6, 10), "softmax_label": (6,)}


def lenet():
    data = mx.sym.Variable("data")
    c1 = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv1")
    a1 = mx.sym.Activation(c1, act_type="tanh", name="tanh1")
    p1 = mx.sym.Pooling(a1, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    c2 = mx.sym.Convolution(p1, kernel=(3, 3), num_filter=6, pad=(1, 1), name="conv2")
    b2 = mx.sym.BatchNorm(c2, fix_gamma=False, name="bn2")
    a2 = mx.sym.Activation(b2, act_type="relu", name="relu2")
    p2 = mx.sym.Pooling(a2, pool_type="avg", kernel=(2, 2), stride=(2, 2), name="pool2")
    f = mx.sym.Flatten(p2, name="flat")
    fc = mx.sym.FullyConnected(f, num_hidden=7, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax"), {"data": (3, 2, 10, 10),
                                                      "softmax_label": (3,)}


def lstm(seq_len=5, hidden=6, vocab=9, embed=4):
    """An LSTM language model unrolled by hand from primitive ops (no mx.rnn)."""
    data = mx.sym.Variable("data")
    label = mx.sym.Variable("softmax_label")
    emb = mx.sym.Embedding(data, input_dim=vocab, output_dim=embed, name="embed")
    steps = mx.sym.SliceChannel(emb, num_outputs=seq_len, axis=1, squeeze_axis=True)
    i2h_w, i2h_b = mx.sym.Variable("i2h_weight"), mx.sym.Variable("i2h_bias")
    h2h_w, h2h_b = mx.sym.Variable("h2h_weight"), mx.sym.Variable("h2h_bias")
    h = mx.sym.zeros(shape=(0, hidden))
    c = mx.sym.zeros(shape=(0, hidden))
    outputs = []
    for t in range(seq_len):
        gates = (mx.sym.FullyConnected(steps[t], weight=i2h_w, bias=i2h_b, num_hidden=4 * hidden)
                 + mx.sym.FullyConnected(h, weight=h2h_w, bias=h2h_b, num_hidden=4 * hidden))
        i, f, g, o = mx.sym.SliceChannel(gates, num_outputs=4)
        i = mx.sym.Activation(i, act_type="sigmoid")
        f = mx.sym.Activation(f, act_type="sigmoid")
        g = mx.sym.Activation(g, act_type="tanh")
        o = mx.sym.Activation(o, act_type="sigmoid")
        c = f * c + i * g
        h = o * mx.sym.Activation(c, act_type="tanh")
        outputs.append(mx.sym.expand_dims(h, axis=1))
    seq = mx.sym.Concat(*outputs, dim=1)
    pred = mx.sym.FullyConnected(mx.sym.Reshape(seq, shape=(-1, hidden)), num_hidden=vocab,
                                 name="pred")
    out = mx.sym.SoftmaxOutput(pred, mx.sym.Reshape(label, shape=(-1,)), name="softmax")
    return out, {"data": (3, seq_len), "softmax_label": (3, seq_len)}


GRAPHS = {"mlp": mlp, "lenet": lenet, "lstm": lstm}


def head(net, kind="reshape"):
    """net flattened and read by a 3-unit FullyConnected named "fc". kind "reshape": through a
    Reshape (0, -1), which the layout pass does not cross, so the FullyConnected reads its data
    batch-first in every plan and the plans with and without a pass run the very same GEMM
    there (a FullyConnected on batch-last data sums in another order on some BLAS kernels,
    OpenBLAS's AVX-512 ones among them); "flatten": through Flatten ("flat"), which passes the
    batch-last layout on to the FullyConnected."""
    flat = (mx.sym.Flatten(net, name="flat") if kind == "flatten"
            else mx.sym.Reshape(net, shape=(0, -1), name="flat"))
    return mx.sym.FullyConnected(flat, num_hidden=3, name="fc")


def convnet(act1="tanh", act2="relu", pool1=None, expose=None, reread=None, flatten="reshape"):
    """conv1 - act1 - pool1 - conv2 (padded) - act2 - 2x2 max pool2 - fc - softmax: the
    patterns of the fusion and layout passes. `pool1`: Pooling arguments over the 2x2 max
    default; `expose`: a node ("act1", "pool1") that is also a graph output; `reread`: a node
    that a second node (`side`) reads as well; `flatten`: `head`'s kind."""
    nodes = {"conv1": mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=4,
                                         name="conv1")}
    nodes["act1"] = mx.sym.Activation(nodes["conv1"], act_type=act1, name="act1")
    kw = dict(pool_type="max", kernel=(2, 2), stride=(2, 2))
    kw.update(pool1 or {})
    nodes["pool1"] = mx.sym.Pooling(nodes["act1"], name="pool1", **kw)
    net = mx.sym.Convolution(nodes["pool1"], kernel=(3, 3), num_filter=5, pad=(1, 1),
                             name="conv2")
    net = mx.sym.Activation(net, act_type=act2, name="act2")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    net = mx.sym.SoftmaxOutput(head(net, flatten), name="softmax")
    if expose:
        return mx.sym.Group([net, nodes[expose]])
    if reread:
        return mx.sym.Group([net, mx.sym.sum(nodes[reread], name="side")])
    return net


CONVNET_SHAPES = {"data": (3, 2, 14, 14), "softmax_label": (3,)}


def bind_random(sym, shapes, seed=0, grad_req="write"):
    """sym bound on the CPU with random arguments (labels among 3 classes)."""
    exe = sym.simple_bind(mx.cpu(), grad_req=grad_req, **shapes)
    rng = np.random.RandomState(seed)
    for name, arr in exe.arg_dict.items():
        if name == "softmax_label":
            arr[:] = rng.randint(0, 3, arr.shape)
        else:
            arr[:] = (rng.randn(*arr.shape) * 2).astype(np.float32)
    return exe


def monitored(exe, is_train=False):
    """[(name, values)] that a monitor with monitor_all sees in one forward pass."""
    got = []
    exe.set_monitor_callback(lambda name, arr: got.append((name, arr.asnumpy())),
                             monitor_all=True)
    exe.forward(is_train=is_train)
    return got


def gradient_steps(exe, steps: int) -> list:
    """The gradients (name -> values) after each of `steps` forward-backward passes."""
    seen = []
    for _ in range(steps):
        exe.forward(is_train=True)
        exe.backward()
        seen.append({k: g.asnumpy() for k, g in exe.grad_dict.items() if g is not None})
    return seen


def same_values(rtol: float, atol: float):
    """`same(a, b, err_msg)`: bit for bit where the CuPy stand-in evaluates the fused kernel
    bodies, to rtol / atol where NVRTC compiles them (it may contract a product and a sum
    into one rounding)."""
    from minimod import backend
    if hasattr(backend._cupy, "host_reads"):
        return np.testing.assert_array_equal
    return lambda a, b, err_msg: np.testing.assert_allclose(a, b, rtol=rtol, atol=atol,
                                                            err_msg=err_msg)


def assert_same_gradients(got: list, want: list, same=np.testing.assert_array_equal) -> None:
    """Each step's gradients (`gradient_steps`) equal, name by name, by `same(a, b,
    err_msg)`."""
    for grads, want_grads in zip(got, want):
        assert grads.keys() == want_grads.keys()
        for k in want_grads:
            same(grads[k], want_grads[k], err_msg=k)


def without_rewrite(graph, shapes, dtypes, first, ctx):
    """In place of a rewrite of the graph with its gradient nodes (`minimod.passes.compiler`
    calls them by name): no change."""
    return graph, shapes, dtypes


def captured_with_and_without(monkeypatch, rewrite: str, sym, shapes, steps=3) -> tuple:
    """({True: kernels, False: kernels}, {True: gradients, False: gradients}) of `steps`
    training steps of `sym` on gpu(0), captured as CUDA graphs on the CuPy stand-in, with
    every rewrite (True) and with the compiler's `rewrite` changing nothing (False)."""
    import pytest

    from minimod import backend
    from minimod.passes import compiler

    from ..fake_cuda_graphs import captured_kernels
    if not hasattr(backend._cupy, "host_reads"):
        pytest.skip("counts the stand-in's recorded kernels")
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1")
    kernels, grads = {}, {}
    for on in (True, False):
        if not on:
            monkeypatch.setattr(compiler, rewrite, without_rewrite)
        exe = sym.simple_bind(mx.gpu(0), **shapes)
        rng = np.random.RandomState(0)
        for arr in exe.arg_dict.values():
            arr[:] = rng.uniform(-1, 1, arr.shape)
        grads[on] = gradient_steps(exe, steps)
        kernels[on] = captured_kernels(exe)
    return kernels, grads


def fit_convnet(sym, contexts, batch_size):
    """A Module on `contexts` after two epochs of `fit` (SGD with momentum, Xavier) over 12
    fixed samples of CONVNET_SHAPES's data, with the iterator it ran over."""
    rng = np.random.RandomState(3)
    data = rng.randn(12, 2, 14, 14).astype(np.float32)
    label = rng.randint(0, 3, 12).astype(np.float32)
    mod = mx.mod.Module(sym, context=contexts)
    it = mx.io.NDArrayIter(data, label, batch_size=batch_size)
    mx.random.seed(1)
    mod.fit(it, num_epoch=2, optimizer="sgd", initializer=mx.init.Xavier(),
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    return mod, it


def trained_pair(bind, sym):
    """`bind(sym, True)` and `bind(sym, False)` (executors with and without a pass) after one
    forward and backward each (compare them with `assert_same_step`)."""
    pair = bind(sym, True), bind(sym, False)
    for exe in pair:
        exe.forward(is_train=True)
        exe.backward()
    return pair


def assert_same_step(a, b, exact=True):
    """a and b wrote the same first output, byte for byte, and the same gradients: byte for
    byte, or (exact=False) equal values (a relu may differ from another in the sign of a
    zero)."""
    def same(x, y):
        return x.tobytes() == y.tobytes() if exact else np.array_equal(x, y)
    assert a.outputs[0].asnumpy().tobytes() == b.outputs[0].asnumpy().tobytes()
    for name, grad in a.grad_dict.items():
        if grad is not None:
            assert same(grad.asnumpy(), b.grad_dict[name].asnumpy()), name
