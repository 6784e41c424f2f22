"""Executor behaviours that follow MXNet 1.9.1 (each checked by running MXNet 1.9.1):
common-subexpression elimination, lenient bind arguments, head gradients, backward before
forward, dtypes of bound arrays, and Executor.reshape's sharing rules."""
import warnings

import numpy as np
import pytest

import minimod as mx
from minimod.base import BindError, MXNetError
from minimod.graph import Entry, Graph, Node
from minimod.ops.registry import get_op_class
from minimod.passes import eliminate_common_expr


@pytest.fixture
def cse(monkeypatch):
    def set_flag(on: bool):
        monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", "1" if on else "0")
    return set_flag


def _bind(sym, grad_req="write"):
    return sym.simple_bind(mx.cpu(), grad_req=grad_req,
                           **{k: (2, 3) for k in sym.list_inputs()})


def _internals(exe) -> int:
    return len(exe.get_optimized_symbol().get_internals())


@pytest.mark.parametrize("build, savings", [
    (lambda a, b, c, d: (a + 1) + (a + 2), 0),
    (lambda a, b, c, d: (a + b) + (a + b), 1),
    (lambda a, b, c, d: ((a + b) + c) + ((a + b) + c), 2),
    # the merged a*d is a repeated output: a _copy keeps the outputs apart
    (lambda a, b, c, d: mx.sym.Group([a * d, a * d]), 0),
    (lambda a, b, c, d: mx.sym.Group([a * d + b, a * d + b]), 1),
    (lambda a, b, c, d: (a + 1) * (a + 1), 1),
])
def test_common_subexpressions_are_computed_once(cse, build, savings):
    a, b, c = (mx.sym.Variable(n) for n in "abc")
    sym = build(a, b, c, a + 1)
    rng = np.random.RandomState(0)
    data = {k: rng.uniform(-1, 1, (2, 3)).astype(np.float32) for k in sym.list_inputs()}
    results = []
    for on in (False, True):
        cse(on)
        exe = _bind(sym, "add")
        outs = exe.forward(is_train=True, **data)
        exe.backward([mx.nd.ones_like(o) for o in outs])
        results.append((exe, [o.asnumpy() for o in outs],
                        [g.asnumpy() for g in exe.grad_arrays]))
    (plain, out0, grad0), (merged, out1, grad1) = results
    assert _internals(plain) - _internals(merged) == savings
    for x, y in zip(out0 + grad0, out1 + grad1):
        np.testing.assert_allclose(x, y, rtol=1e-6)
    assert list(merged.output_dict) == sym.list_outputs()  # the symbol's names stay


def test_repeated_outputs_get_copies_named_as_mxnet(cse):
    a = mx.sym.Variable("a")
    with mx.name.NameManager():
        d = a + 1
        sym = mx.sym.Group([a * d, a * d, d, d])
    cse(True)
    assert _bind(sym).get_optimized_symbol().list_outputs() == [
        "_mul0_output", "_mul0_0_copy_output", "_plusscalar0_output",
        "_plusscalar0_0_copy_output"]
    # nothing merged: the graph is left as written, repeated outputs included
    with mx.name.NameManager():
        d = a + 1
        sym = mx.sym.Group([d, d])
    assert _bind(sym).get_optimized_symbol().list_outputs() == [
        "_plusscalar0_output", "_plusscalar0_output"]


def test_environment_switch_is_read_at_bind(cse):
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    sym = (a + b) * (a + b)
    cse(False)
    plain = _bind(sym)
    cse(True)
    merged = _bind(sym)
    assert _internals(plain) == 5 and _internals(merged) == 4
    cse(False)  # a reshape compiles like the executor it comes from
    assert _internals(merged.reshape(a=(1, 3), b=(1, 3))) == 4


def _noisy(op_name):
    """An op class like `op_name` whose runs may differ (as a random op's do)."""
    return type("Noisy", (get_op_class(op_name),), {"deterministic": False})


def test_nondeterministic_and_stateful_nodes_are_never_merged():
    a = Node(None, "a")
    noisy = _noisy("sin")
    n1 = Node(noisy({}), "n1", {}, [Entry(a)])
    n2 = Node(noisy({}), "n2", {}, [Entry(a)])
    add = Node(get_op_class("elemwise_add")({}), "add", {}, [Entry(n1), Entry(n2)])
    graph = Graph.from_heads([Entry(add)])
    assert eliminate_common_expr(graph) is graph
    # an op with aux states updates them in place: two BatchNorms are two updates
    data = mx.sym.Variable("data")
    gamma, beta = mx.sym.Variable("g"), mx.sym.Variable("b")
    mean, var = mx.sym.Variable("m"), mx.sym.Variable("v")
    bn = [mx.sym.BatchNorm(data, gamma, beta, mean, var) for _ in range(2)]
    graph = (bn[0] + bn[1])._graph
    assert eliminate_common_expr(graph) is graph


def test_only_identical_attributes_merge():
    a = mx.sym.Variable("a")
    sym = mx.sym.sum(a, axis=0) + mx.sym.sum(a, axis=1)
    assert eliminate_common_expr(sym._graph) is sym._graph
    sym = mx.sym.sum(a, axis=0) + mx.sym.sum(a, axis=(0,))  # "0" and "(0,)" differ as text
    assert eliminate_common_expr(sym._graph) is sym._graph
    sym = mx.sym.sum(a, axis=1) + mx.sym.sum(a, axis=1)
    assert len(eliminate_common_expr(sym._graph).nodes) == len(sym._graph.nodes) - 1


# ---------------------------------------------------------------------------- bind arguments

def _fc():
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    return mx.sym.FullyConnected(x, w, num_hidden=3, no_bias=True)


def test_bind_ignores_names_the_symbol_lacks():
    args = {"x": mx.nd.ones((2, 4)), "w": mx.nd.ones((3, 4)), "b": None}
    grads = {"x": mx.nd.zeros((2, 4)), "w": mx.nd.zeros((3, 4)), "b": None}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a None placeholder is not worth a warning
        exe = _fc().bind(mx.cpu(), args, args_grad=grads,
                         grad_req={"x": "write", "w": "write", "b": "null"})
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 3)))
    np.testing.assert_allclose(grads["x"].asnumpy(), 3.0)
    with pytest.warns(UserWarning, match="'q'"):
        _fc().bind(mx.cpu(), dict(args, q=mx.nd.ones((1,))))


def test_grad_req_dict_naming_a_non_argument():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exe = _fc().simple_bind(mx.cpu(), x=(2, 4), grad_req={"w": "write", "params": "null"})
    assert exe.grad_dict["x"] is None and exe.grad_dict["w"].shape == (3, 4)
    with pytest.warns(UserWarning, match="params"):
        _fc().simple_bind(mx.cpu(), x=(2, 4), grad_req={"w": "write", "params": "add"})


def test_null_grad_req_keeps_the_bound_gradient_array_untouched():
    grad_w = mx.nd.full((3, 4), 7.0)
    exe = _fc().bind(mx.cpu(), {"x": mx.nd.ones((2, 4)), "w": mx.nd.ones((3, 4))},
                     args_grad={"x": mx.nd.zeros((2, 4)), "w": grad_w},
                     grad_req={"x": "write", "w": "null"})
    assert exe.grad_dict["w"] is grad_w and exe.grad_arrays[1] is grad_w
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 3)))
    np.testing.assert_allclose(grad_w.asnumpy(), 7.0)
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), 3.0)


def test_bound_dtype_overrides_a_declared_dtype():
    x = mx.sym.Variable("x", dtype="float64")
    y = mx.sym.Variable("y", dtype="float64")
    exe = mx.sym.dot(x, y).bind(mx.cpu(), {"x": mx.nd.ones((2, 3)), "y": mx.nd.ones((3, 2))})
    assert exe.forward()[0].dtype == np.float32
    exe = mx.sym.dot(x, y).simple_bind(mx.cpu(), x=(2, 3), y=(3, 2))
    assert exe.arg_dict["x"].dtype == np.float64  # undeclared by type_dict: the hint


# ---------------------------------------------------------------------------- backward

def test_extra_head_gradients_are_ignored_and_missing_loss_ones_are_not_needed():
    x = mx.sym.Variable("x")
    exe = mx.sym.sin(x).simple_bind(mx.cpu(), x=(2,))
    exe.forward(is_train=True, x=mx.nd.array([0.0, 1.0]))
    exe.backward([mx.nd.array([1.0, 2.0]), mx.nd.ones((5,))])
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), [1.0, 2 * np.cos(1.0)],
                               rtol=1e-6)
    label = mx.sym.Variable("label")
    net = mx.sym.Group([mx.sym.sin(x), mx.sym.MakeLoss(mx.sym.sum(x * label))])
    exe = net.simple_bind(mx.cpu(), x=(2,), label=(2,))
    exe.forward(is_train=True, x=mx.nd.array([0.0, 1.0]), label=mx.nd.ones((2,)))
    exe.backward([mx.nd.ones((2,))])  # the loss output needs no head gradient
    with pytest.raises(MXNetError, match="head gradient"):
        exe.backward([None, None])


def test_backward_before_forward_runs_the_forward_first():
    data = mx.sym.Variable("data")
    net = mx.sym.repeat(data, repeats=2, axis=1)
    x = mx.nd.array(np.arange(12.0).reshape(3, 4))
    grad = mx.nd.zeros((3, 4))
    exe = net.bind(mx.cpu(), [x], args_grad=[grad])
    head = np.arange(24.0).reshape(3, 8)
    exe.backward(mx.nd.array(head))
    np.testing.assert_allclose(grad.asnumpy(), head[:, 0::2] + head[:, 1::2])
    # and where backward reads forward values, they are this executor's
    act = mx.sym.Activation(data, act_type="tanh")
    grad = mx.nd.zeros((3, 4))
    exe = act.bind(mx.cpu(), [x * 0.1], args_grad=[grad])
    exe.backward(mx.nd.ones((3, 4)))
    np.testing.assert_allclose(grad.asnumpy(), 1 - np.tanh(x.asnumpy() * 0.1) ** 2,
                               rtol=1e-5)


def test_a_gradient_through_a_non_differentiable_op_is_refused_at_bind():
    x, idx = mx.sym.Variable("x"), mx.sym.Variable("idx")
    taken = mx.sym.batch_take(x, idx, name="take")
    types = {"x": np.float32, "idx": np.int32}
    with pytest.raises(MXNetError, match="take \\(batch_take\\) is non-differentiable"):
        taken.simple_bind(mx.cpu(), x=(4, 3), idx=(4,), type_dict=types)
    # no gradient reaches it: fine
    exe = mx.sym.BlockGrad(taken).simple_bind(mx.cpu(), x=(4, 3), idx=(4,), type_dict=types)
    exe.forward(is_train=True)
    exe.backward()
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), 0)
    taken.simple_bind(mx.cpu(), x=(4, 3), idx=(4,), type_dict=types, grad_req="null")


# ---------------------------------------------------------------------------- reshape

def _fc_exe():
    x = mx.sym.Variable("x")
    exe = mx.sym.FullyConnected(x, num_hidden=4).simple_bind(mx.cpu(), x=(5, 4),
                                                             grad_req="null")
    exe.arg_arrays[0][:] = 1
    exe.arg_arrays[1][:] = 1
    exe.arg_arrays[2][:] = 0
    return exe


def test_reshape_down_shares_the_argument_memory():
    exe = _fc_exe()
    small = exe.reshape(x=(3, 4))
    np.testing.assert_allclose(small.forward()[0].asnumpy(), 4.0)
    small.arg_arrays[0][:] = 2  # a view of the first 12 elements of exe's x
    np.testing.assert_allclose(exe.arg_arrays[0].asnumpy()[:3], 2.0)
    np.testing.assert_allclose(exe.arg_arrays[0].asnumpy()[3:], 1.0)
    assert small.arg_arrays[1] is exe.arg_arrays[1]


def test_reshape_up_needs_allow_up_sizing_and_gets_new_arrays():
    exe = _fc_exe()
    with pytest.raises(BindError, match="allow_up_sizing"):
        exe.reshape(x=(6, 4))
    big = exe.reshape(allow_up_sizing=True, x=(6, 4))
    big.arg_arrays[0][:] = 0
    np.testing.assert_allclose(exe.arg_arrays[0].asnumpy(), 1.0)
    np.testing.assert_allclose(big.arg_arrays[1].asnumpy(), 1.0)
    with pytest.raises(BindError, match="fc.*weight|partial_shaping"):
        exe.reshape(x=(5, 2))  # the weight would change shape without being named
    narrow = exe.reshape(partial_shaping=True, x=(5, 2))
    assert narrow.arg_arrays[1].shape == (4, 2)


def test_simple_bind_ignores_a_shape_for_an_unknown_name_with_a_warning():
    net = mx.sym.var("x") * 2
    with pytest.warns(UserWarning, match="ignoring 'force_rebind'"):
        exe = net.simple_bind(mx.cpu(), force_rebind=True, x=(2, 3))
    assert exe.outputs[0].shape == (2, 3)


def test_simple_bind_takes_a_shape_of_none_as_no_shape():
    """MXNet binds only the tuple-valued keywords, so `label=None` (a net without a label, a
    shape not known yet) leaves the input to shape inference; a shape that is neither a
    tuple nor None is refused by name."""
    net = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=3, name="fc")
    exe = net.simple_bind(mx.cpu(), x=(2, 5), fc_weight=None)
    assert exe.arg_dict["fc_weight"].shape == (3, 5)
    with pytest.raises(TypeError, match="x=5"):
        net.simple_bind(mx.cpu(), x=5)


def test_simple_bind_checks_stype_dict_and_keeps_the_values():
    """MXNet makes the named arguments sparse arrays; minimod's executor holds them dense (as
    a sparse array given to bind), so the same values go in and come out."""
    net = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=2, name="fc")
    stypes = {"x": "csr", "fc_weight": "default", "fc_bias": "default", "other": "csr"}
    exe = net.simple_bind(mx.cpu(), x=(3, 4), stype_dict=stypes)
    data = np.array([[0, 1, 0, 2], [0, 0, 0, 0], [3, 0, 0, 0]], np.float32)
    exe.arg_dict["x"][:] = mx.nd.array(data).tostype("csr")
    exe.arg_dict["fc_weight"][:] = 1
    exe.arg_dict["fc_bias"][:] = 0
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), [[3, 3], [0, 0], [3, 3]])
    with pytest.raises(mx.MXNetError, match=r"stype_dict\['x'\] = 'bogus'"):
        net.simple_bind(mx.cpu(), x=(3, 4), stype_dict={"x": "bogus"})
    with pytest.raises(TypeError, match="stype_dict must map"):
        net.simple_bind(mx.cpu(), x=(3, 4), stype_dict=["csr"])
