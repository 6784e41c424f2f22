"""mx.sym.contrib.foreach: MXNet 1.9.1's JSON (byte for byte), outputs and gradients for the
graphs of tests/data/symbol/foreach_cases.py (foreach_golden.npz, gen_foreach_golden.py),
the unrolled plan, reshaping to another length, training in a Module, and the errors."""
import json
import os
import sys

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError, ShapeError

HERE = os.path.join(os.path.dirname(__file__), "..", "data", "symbol")
sys.path.insert(0, HERE)
from foreach_cases import CASES, FORWARD_ONLY, MXNET_WRONG_GRADS  # noqa: E402

GOLDEN = np.load(os.path.join(HERE, "foreach_golden.npz"))


def _build(name):
    """The case's graph, named as if built first in a fresh process (as the golden file's)."""
    mx.attribute.AttrScope._subgraph_names.clear()
    with mx.name.NameManager():
        return CASES[name](mx)


def _bind(name, ctx, sym=None):
    built, shapes = _build(name)
    sym = built if sym is None else sym
    grads = name not in FORWARD_ONLY
    exe = sym.simple_bind(ctx, grad_req="write" if grads else "null", **shapes)
    for n in sym.list_arguments():
        exe.arg_dict[n][:] = GOLDEN["%s/arg_%s" % (name, n)]
    return exe, grads


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_is_mxnets(name):
    sym, _ = _build(name)
    assert sym.tojson() == str(GOLDEN[name + "/json"])
    assert mx.sym.load_json(str(GOLDEN[name + "/json"])).tojson() == sym.tojson()


@pytest.mark.parametrize("from_json", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_numbers_are_mxnets(name, from_json, ctx):
    sym = mx.sym.load_json(str(GOLDEN[name + "/json"])) if from_json else None
    exe, grads = _bind(name, ctx, sym)
    outs = exe.forward(is_train=True)
    tol = 1e-5 if ctx.device_type == "cpu" else 1e-4
    for i, out in enumerate(outs):
        np.testing.assert_allclose(out.asnumpy(), GOLDEN["%s/out%d" % (name, i)], rtol=tol,
                                   atol=tol, err_msg="output %d" % i)
    if not grads:
        return
    exe.backward([mx.nd.array(GOLDEN["%s/head%d" % (name, i)], ctx=ctx)
                  for i in range(len(outs))])
    wrong = MXNET_WRONG_GRADS.get(name, set())
    for n, g in exe.grad_dict.items():
        if n not in wrong:
            np.testing.assert_allclose(g.asnumpy(), GOLDEN["%s/grad_%s" % (name, n)],
                                       rtol=tol, atol=tol, err_msg="gradient of " + n)


@pytest.mark.parametrize("name", sorted(MXNET_WRONG_GRADS))
def test_gradients_mxnet_gets_wrong_match_finite_differences(name):
    """float64 central differences of sum(head * outputs), argument by argument."""
    sym, shapes = _build(name)
    args = {n: GOLDEN["%s/arg_%s" % (name, n)].astype("float64") for n in sym.list_arguments()}
    heads = [GOLDEN["%s/head%d" % (name, i)].astype("float64")
             for i in range(len(sym.list_outputs()))]
    exe = sym.simple_bind(mx.cpu(), type_dict=dict.fromkeys(args, "float64"), **shapes)

    def loss(values):
        for n, v in values.items():
            exe.arg_dict[n][:] = v
        return sum(float((o.asnumpy() * h).sum())
                   for o, h in zip(exe.forward(is_train=True), heads))
    loss(args)
    exe.backward([mx.nd.array(h, dtype="float64") for h in heads])
    grads = {n: g.asnumpy() for n, g in exe.grad_dict.items()}
    for n in sorted(MXNET_WRONG_GRADS[name]):
        numeric = np.zeros_like(args[n])
        for idx in np.ndindex(args[n].shape):
            for sign in (1, -1):
                moved = dict(args, **{n: args[n].copy()})
                moved[n][idx] += sign * 1e-6
                numeric[idx] += sign * loss(moved) / 2e-6
        np.testing.assert_allclose(grads[n], numeric, rtol=1e-6, atol=1e-7, err_msg=n)
        assert np.abs(GOLDEN["%s/grad_%s" % (name, n)] - numeric).max() > 0.1  # MXNet's


def test_passthrough_gradients_which_mxnet_cannot_bind():
    """The data step and an unchanged state as outputs: out0 = data, out1 = c at each step,
    final s = s0 + sum(data), final c = c0; so each gradient is a sum of head gradients."""
    sym, shapes = CASES["passthrough"](mx)
    exe = sym.simple_bind(mx.cpu(), **shapes)
    rng = np.random.RandomState(0)
    heads = [rng.uniform(-1, 1, o.shape).astype("float32") for o in exe.outputs]
    exe.forward(is_train=True)
    exe.backward([mx.nd.array(h) for h in heads])
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), heads[0] + heads[2], rtol=1e-6)
    np.testing.assert_allclose(exe.grad_dict["s"].asnumpy(), heads[2], rtol=1e-6)
    np.testing.assert_allclose(exe.grad_dict["c"].asnumpy(), heads[1].sum(0) + heads[3],
                               rtol=1e-6)


def test_shapes_and_types_are_inferred_through_the_body():
    sym, _ = _build("rnn")
    args, outs, _ = sym.infer_shape(data=(7, 3, 2), h0=(3, 4))
    assert args == [(7, 3, 2), (3, 4), (4, 6)] and outs == [(7, 3, 4), (3, 4)]
    _, outs, _ = sym.infer_type(data="float64")
    assert outs == [np.float64, np.float64]
    assert sym.list_outputs() == ["_foreach0_output0", "_foreach0_output1"]


def test_reshape_to_another_length_unrolls_again():
    exe, _ = _bind("rnn", mx.cpu())
    longer = exe.reshape(allow_up_sizing=True, data=(8, 3, 2))
    longer.arg_dict["data"][:] = np.ones((8, 3, 2))
    assert longer.forward()[0].shape == (8, 3, 4)
    steps = [line for line in longer.debug_str().splitlines() if "_fc " in line]
    assert len(steps) == 8  # one FullyConnected per step


def test_module_trains_a_foreach_rnn():
    data, w = mx.sym.var("data"), mx.sym.var("rnn_weight")

    def step(x, states):
        h = mx.sym.tanh(mx.sym.FullyConnected(mx.sym.concat(x, states[0], dim=1), weight=w,
                                              num_hidden=5, no_bias=True))
        return h, [h]
    h0 = mx.sym.zeros((4, 5))
    _, last = mx.sym.contrib.foreach(step, mx.sym.transpose(data, axes=(1, 0, 2)), [h0])
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(last[0], num_hidden=1),
                                        mx.sym.var("label"))
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (16, 6, 3)).astype("float32")
    y = x.sum(axis=(1, 2)).reshape(-1, 1) / 6
    it = mx.io.NDArrayIter(x, y, batch_size=4, label_name="label")
    mod = mx.mod.Module(net, data_names=["data"], label_names=["label"])
    metric = mx.metric.MSE()
    mod.fit(it, num_epoch=1, initializer=mx.init.Xavier(), eval_metric=metric,
            optimizer_params={"learning_rate": 0.1})
    first = metric.get()[1]
    mod.fit(it, num_epoch=40, eval_metric=metric, begin_epoch=1)
    assert metric.get()[1] < first / 3


def test_errors_name_the_loop():
    data = mx.sym.var("data")
    with pytest.raises(MXNetError, match="does not use the loop state"):
        mx.sym.contrib.foreach(lambda x, s: (x * 2, [x * 3]), data, [mx.sym.var("s")])
    with pytest.raises(MXNetError, match="states laid out"):
        mx.sym.contrib.foreach(lambda x, s: (x + s[0], s[0]), data, [mx.sym.var("s")])
    out, _ = mx.sym.contrib.foreach(lambda x, s: (x + s[0], [s[0] * 2]), data,
                                    [mx.sym.var("s")])
    with pytest.raises(ShapeError, match="_foreach.*cannot tell the loop's length"):
        out.simple_bind(mx.cpu(), s=(2,))
    with pytest.raises(AssertionError, match="does not use the data"):  # MXNet asserts
        mx.sym.contrib.foreach(lambda x, s: (s[0] * 2, [s[0] * 3]), data, [mx.sym.var("s")])
    text = json.loads(out.tojson())
    del text["nodes"][-1]["subgraphs"]
    with pytest.raises(MXNetError, match="needs its body"):
        mx.sym.load_json(json.dumps(text))


def test_a_1d_array_steps_as_1_element_arrays_as_in_mxnet():
    """MXNet 1.9.1's legacy shapes have no 0-d arrays: each step of a (3,) array is (1,), so
    the stacked outputs are (3, 1) (its numbers; gradients too)."""
    d, s = mx.sym.var("d"), mx.sym.var("s")
    outs, states = mx.sym.contrib.foreach(lambda x, st: (x * st[0], [st[0] + x]), d, [s])
    net = mx.sym.Group([outs] + states)
    assert net.infer_shape(d=(3,), s=(1,))[1] == [(3, 1), (1,)]
    exe = net.bind(mx.cpu(), {"d": mx.nd.arange(3), "s": mx.nd.ones(1)},
                   args_grad={"d": mx.nd.zeros(3), "s": mx.nd.zeros(1)})
    exe.forward(is_train=True)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), [[0], [1], [4]])
    np.testing.assert_array_equal(exe.outputs[1].asnumpy(), [4])
    exe.backward([mx.nd.ones((3, 1)), mx.nd.ones(1)])
    np.testing.assert_array_equal(exe.grad_dict["d"].asnumpy(), [5, 4, 3])
    np.testing.assert_array_equal(exe.grad_dict["s"].asnumpy(), [4])
