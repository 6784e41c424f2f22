"""Symbol behaviours that follow MXNet 1.9.1 where an earlier minimod was stricter or looser.

Each test states the MXNet behaviour it pins (checked by running MXNet 1.9.1).
"""
import warnings

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError, NotImplementedForSymbol, ShapeError
from minimod.graph import parse_shape_attr


@pytest.mark.parametrize("text, shape", [
    ("(5,)", (5,)), ("(2, 3)", (2, 3)), ("[2, 3]", (2, 3)), ("(0, 5)", (None, 5)),
    ("5", (5,)), ("()", None), ("(2L, 3L)", (2, 3)), ("(-1, 4)", (None, 4)), ("[]", None),
])
def test_shape_attribute_forms(text, shape):
    # what str(shape) gives for tuples and lists, including one-element tuples
    assert parse_shape_attr(text) == shape


def test_shape_attribute_garbage_is_a_shape_error():
    with pytest.raises(ShapeError, match="abc"):
        parse_shape_attr("(abc, 2)")


def test_declared_shape_is_a_hint_that_given_shapes_override():
    a = mx.sym.Variable("a", shape=(2, 3))
    c = mx.sym.elemwise_add(a, mx.sym.Variable("b"))
    assert c.infer_shape() == ([(2, 3), (2, 3)], [(2, 3)], [])
    assert c.infer_shape(a=(5, 6)) == ([(5, 6), (5, 6)], [(5, 6)], [])
    exe = c.simple_bind(mx.cpu(), a=(4, 1))
    assert exe.outputs[0].shape == (4, 1)
    # giving the other input a shape that contradicts the hint is an error, as in MXNet
    with pytest.raises(ShapeError):
        c.infer_shape(b=(4, 5))


def test_one_element_declared_shape():
    a = mx.sym.Variable("a", shape=(0, 10))
    b = mx.sym.SliceChannel(a, num_outputs=10, axis=1, squeeze_axis=True)
    d = b[1] + mx.sym.Variable("c", shape=(5,))
    args, outs, _ = d.infer_shape()
    assert dict(zip(d.list_arguments(), args)) == {"a": (5, 10), "c": (5,)}
    assert outs == [(5,)]


def test_declared_dtype_is_a_hint_that_given_dtypes_override():
    a = mx.sym.Variable("a", dtype="float16")
    b = mx.sym.Variable("b")
    assert (a + b).infer_type() == ([np.float16, np.float16], [np.float16], [])
    assert (a + b).infer_type(a="float32") == ([np.float32, np.float32], [np.float32], [])
    with pytest.raises(mx.base.DTypeError, match="float16"):
        (a + b).infer_type(b="float32")


def test_inconsistent_shapes_anywhere_are_an_error():
    # the outputs are decided by `x + v` alone; the transpose still disagrees with them
    v, x = mx.sym.Variable("V"), mx.sym.Variable("x")
    net = mx.sym.transpose(v, name="t") + (x + v)
    with pytest.raises(ShapeError, match="t \\(transpose\\)"):
        net.infer_shape(x=(2, 3))
    with pytest.raises(ShapeError):
        net.simple_bind(mx.cpu(), x=(2, 3), grad_req="null")
    assert net.infer_shape(x=(3, 3))[1] == [(3, 3)]


def test_get_children_lists_each_head_node_once():
    data = mx.sym.Variable("data")
    sliced = mx.sym.SliceChannel(data, num_outputs=3, name="slice")
    assert sliced.get_children().list_outputs() == ["data"]
    assert mx.sym.Group([sliced[2], sliced[0]]).get_children().list_outputs() == ["data"]
    assert (data + data).get_children().list_outputs() == ["data", "data"]
    fc = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
    assert mx.sym.Group([sliced[1], fc]).get_children().list_outputs() == [
        "data", "data", "fc_weight", "fc_bias"]
    assert data.get_children() is None


def test_ndarray_only_operations_raise_not_implemented_for_symbol():
    x = mx.sym.Variable("x")
    with pytest.raises(NotImplementedForSymbol, match="bool"):
        bool(x)
    with pytest.raises(NotImplementedForSymbol):
        if x:
            pass
    with pytest.raises(NotImplementedForSymbol, match=r"\+="):
        x += 1
    for method in ("asnumpy", "asscalar", "wait_to_read", "copy", "detach", "backward",
                   "as_in_context"):
        with pytest.raises(NotImplementedForSymbol, match=method):
            getattr(x, method)()
    assert issubclass(NotImplementedForSymbol, MXNetError)


def _rnn():
    return mx.sym.RNN(mx.sym.Variable("data"), mx.sym.Variable("param"),
                      mx.sym.Variable("h0"), mx.sym.Variable("h1"), state_size=10,
                      num_layers=2, bidirectional=True, state_outputs=True, mode="lstm",
                      name="rnn")


def test_gen_atomic_symbol_copies_the_head_op_without_inputs():
    atomic = _rnn()._gen_atomic_symbol()
    assert atomic.list_outputs() == ["output", "state_output", "statecell_output"]
    assert atomic.list_arguments() == []
    assert atomic.list_attr()["state_size"] == "10"
    assert atomic.attr("mode") == "lstm"
    assert '"name": ""' in atomic.tojson()


def test_atomic_symbol_composes_like_the_op_constructor():
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    atomic = fc._gen_atomic_symbol()
    w, b = fc.get_children()[1], fc.get_children()[2]
    rebuilt = atomic(data, w, b)
    rebuilt._set_attr(name="fc")  # MXNet's AMP names the rebuilt node this way
    assert rebuilt.tojson() == fc.tojson()
    partial = fc._gen_atomic_symbol()(data, name="fc2")
    assert partial.list_arguments() == ["data", "fc2_weight", "fc2_bias"]
    with pytest.raises(MXNetError, match="group"):
        mx.sym.Group([fc, data + 1])._gen_atomic_symbol()
    with pytest.raises(MXNetError, match="variable"):
        data._gen_atomic_symbol()


@pytest.mark.parametrize("method, kwargs, shape", [
    ("shape_array", {}, (5, 17, 1)), ("size_array", {}, (5, 17, 1)),
    ("softmin", {}, (5, 17, 1)), ("rcbrt", {}, (5, 17, 1)), ("sort", {"axis": 1}, (5, 17, 1)),
    ("argsort", {"axis": 1}, (5, 17, 1)), ("diag", {}, (4, 4)),
    ("depth_to_space", {"block_size": 2}, (1, 4, 2, 3)),
    ("space_to_depth", {"block_size": 2}, (1, 1, 4, 6)),
])
def test_fluent_methods_are_the_operators(method, kwargs, shape):
    with mx.name.NameManager():
        data = mx.sym.Variable("data")
        regular = getattr(mx.sym, method)(data, name=method + "0", **kwargs)
        fluent = getattr(data, method)(**kwargs)
    assert fluent.tojson() == regular.tojson()
    x = np.random.RandomState(0).uniform(0.5, 1.5, shape).astype(np.float32)
    got = fluent.eval(mx.cpu(), data=mx.nd.array(x))[0].asnumpy()
    want = regular.eval(mx.cpu(), data=mx.nd.array(x))[0].asnumpy()
    np.testing.assert_array_equal(got, want)


def test_fluent_slice_like():
    data = mx.sym.Variable("data")
    out = data.slice_like(mx.sym.zeros((3, 3)), axes=(0, -2))
    assert out.infer_shape(data=(5, 17, 1))[1] == [(3, 3, 1)]


def test_attributes_of_groups():
    data = mx.sym.Variable("data")
    a = mx.sym.FullyConnected(data, num_hidden=2, name="a")
    b = mx.sym.FullyConnected(data, num_hidden=3, name="b")
    assert mx.sym.Group([a, b]).list_attr() == {"num_hidden": "2"}  # the first node's
    assert mx.sym.Group([a, b]).attr("num_hidden") is None
    sliced = mx.sym.SliceChannel(data, num_outputs=2)
    assert sliced.attr("num_outputs") == "2"


def test_no_warning_for_plain_infer_shape():
    a = mx.sym.Variable("a", shape=(2,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (a * 2).infer_shape() == ([(2,)], [(2,)], [])
