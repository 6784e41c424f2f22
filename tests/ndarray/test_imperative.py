"""`mx.nd.<Operator>(...)` runs any registered operator once, as MXNet's NDArray frontend does.

tests/data/imperative/ holds calls MXNet 1.9.1 made (gen_imperative.py): their inputs, their
positional and keyword parameters, and MXNet's outputs.
"""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError, ShapeError

HERE = os.path.join(os.path.dirname(__file__), "..", "data", "imperative")
GOLDEN = json.load(open(os.path.join(HERE, "imperative.json")))
ARRAYS = np.load(os.path.join(HERE, "imperative.npz"))


def _tuples(value):
    return tuple(value) if isinstance(value, list) else value


def _call(call):
    fn = getattr(mx.nd, call["op"], None) or getattr(mx.nd._internal, call["op"])
    inputs = [mx.nd.array(ARRAYS[name]) for name in call["inputs"]]
    args = [_tuples(a) for a in call["args"]]
    kwargs = {k: _tuples(v) for k, v in call["kwargs"].items()}
    return fn(*inputs, *args, **kwargs)


@pytest.mark.parametrize("k, call", list(enumerate(GOLDEN["calls"])),
                         ids=["%d-%s" % (k, c["op"]) for k, c in enumerate(GOLDEN["calls"])])
def test_imperative_call_gives_mxnets_result(k, call):
    result = _call(call)
    assert isinstance(result, list) == call["list"]
    results = result if call["list"] else [result]
    assert len(results) == call["outputs"]
    for j, r in enumerate(results):
        want = ARRAYS["c%d_out%d" % (k, j)]
        assert isinstance(r, mx.nd.NDArray)
        assert r.shape == want.shape
        assert r.dtype == want.dtype
        np.testing.assert_allclose(r.asnumpy(), want, rtol=2e-6, atol=1e-6)


def test_every_public_operator_is_an_nd_function():
    from minimod.ops.registry import list_ops
    missing = [n for n in list_ops() if not n.startswith("_") and not callable(
        getattr(mx.nd, n, None))]
    assert missing == []
    assert callable(mx.nd._internal._plus_scalar)


def test_hand_written_routines_keep_their_names():
    from minimod.ndarray import routines
    assert mx.nd.sum is routines.sum
    assert mx.nd.Activation.__module__ == "minimod.ndarray.imperative"


def test_out_receives_the_result_and_is_returned():
    x = mx.nd.array([[-1.0, 2.0]])
    out = mx.nd.zeros((1, 2))
    assert mx.nd.Activation(x, act_type="relu", out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), [[0.0, 2.0]])
    a, b = mx.nd.zeros((1, 1)), mx.nd.zeros((1, 1))
    mx.nd.SliceChannel(x, 2, out=[a, b])
    assert (a.asscalar(), b.asscalar()) == (-1.0, 2.0)
    with pytest.raises(ShapeError, match=r"mx.nd.Activation: out= has shape \(2,\) but the "
                                         r"result is \(1, 2\)"):
        mx.nd.Activation(x, act_type="relu", out=mx.nd.zeros((2,)))


def test_results_are_new_arrays():
    x = mx.nd.array([1.0, 2.0])
    y = mx.nd.identity(x)
    y[:] = 5
    assert x.asnumpy().tolist() == [1.0, 2.0]


def test_bad_calls_name_the_operator_and_the_input():
    x = mx.nd.ones((3, 5))
    with pytest.raises(ShapeError, match="mx.nd.FullyConnected: .*weight"):
        mx.nd.FullyConnected(x, mx.nd.ones((4, 6)), mx.nd.ones(4), num_hidden=4)
    with pytest.raises(MXNetError, match="mx.nd.FullyConnected: input 'weight' is required"):
        mx.nd.FullyConnected(x, num_hidden=4)
    with pytest.raises(TypeError, match="mx.nd.Activation has no input named 'gamma'"):
        mx.nd.Activation(x, act_type="relu", gamma=x)
    with pytest.raises(MXNetError, match="act_type"):
        mx.nd.Activation(x)
    with pytest.raises(TypeError, match="LeakyReLU got multiple values for 'act_type'"):
        mx.nd.LeakyReLU(x, None, "leaky", act_type="elu")
    with pytest.raises(TypeError, match="SliceChannel: positional argument 1 is its "
                                        "parameter 'num_outputs', got NDArray"):
        mx.nd.SliceChannel(x, x)


def test_inputs_on_two_devices_are_refused():
    x = mx.nd.ones((2,))
    y = mx.nd.ones((2,))
    y._ctx = mx.cpu(1)
    with pytest.raises(MXNetError, match="mx.nd.broadcast_plus: inputs live on cpu\\(0\\) "
                                         "and cpu\\(1\\)"):
        mx.nd.broadcast_plus(x, y)


def test_creation_ops_take_their_context_from_ctx():
    a = mx.nd._internal._full(shape=(2,), value=3.0, ctx=mx.cpu(0))
    assert a.context == mx.cpu(0)
    assert a.asnumpy().tolist() == [3.0, 3.0]


def test_the_same_parameters_reuse_one_op():
    from minimod.ndarray import imperative
    imperative._op.cache_clear()
    x = mx.nd.ones((2, 2))
    for _ in range(3):
        mx.nd.LeakyReLU(x, act_type="leaky", slope=0.1)
    info = imperative._op.cache_info()
    assert (info.misses, info.hits) == (1, 2)


def test_operator_methods_of_ndarray_and_symbol():
    """MXNet's fluent methods that are operators: `x.log10()`, `s.topk(k=2)`."""
    x = mx.nd.array([[0.5, -0.25], [0.1, 0.9]])
    np.testing.assert_allclose(x.arcsin().asnumpy(), np.arcsin(x.asnumpy()), rtol=1e-6)
    assert x.slice((0, 0), (1, 2)).asnumpy().tolist() == [[0.5, -0.25]]
    with pytest.raises(AttributeError):
        x.FullyConnected  # noqa: B018 (operators that are not MXNet methods stay off NDArray)
    s = mx.sym.var("s")
    out = s.topk(k=2, name="t")
    assert json.loads(out.tojson())["nodes"][-1]["attrs"] == {"k": "2"}
    assert s.log10(name="l").get_internals().list_outputs() == ["s", "l_output"]


def test_nan_results_are_silent_as_in_mxnet(recwarn):
    assert np.isnan(mx.nd.log10(mx.nd.array([-1.0])).asscalar())
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
