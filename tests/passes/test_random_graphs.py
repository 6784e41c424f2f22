"""Hypothesis builds random small graphs; the memory plan must be safe and the gradients
must match central differences on every one of them. Besides elementwise ops the graphs
hold what the plan places inside other values: reshapes and copies (views of their input),
splits of the rows (parts of their input) and joins of the rows (written in place)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import minimod as mx
from minimod.executor import simple_bind
from minimod.testing import check_numeric_gradient

UNARY = ["tanh", "sigmoid", "square", "exp"]
BINARY = ["elemwise_add", "elemwise_mul", "elemwise_sub", "_maximum"]


def _restructured(kind: str, x, shape: tuple, rows: list):
    """x (of `shape`) through a chain of ops the plan places in other values' bytes, back
    to `shape`: `rows` says which rows get squashed on the way."""
    if kind == "reshape":  # two views
        return mx.sym.Reshape(mx.sym.Reshape(x, shape=(-1,)), shape=shape)
    if kind == "copy":
        return mx.sym.identity(mx.sym.expand_dims(x, axis=0)).reshape(shape)
    parts = mx.sym.SliceChannel(x, axis=0, num_outputs=shape[0], squeeze_axis=True)
    picked = [mx.sym.tanh(parts[r]) if r in rows else parts[r] for r in range(shape[0])]
    if kind == "rows":  # parts of x, joined again through views of each row
        return mx.sym.Concat(*[mx.sym.expand_dims(p, axis=0) for p in picked], dim=0)
    return mx.sym.Reshape(mx.sym.stack(*picked, axis=0), shape=shape)  # "stack"


@st.composite
def graphs(draw):
    """A random DAG over two inputs of one shape: unary ops, binary ops, a reused node, and
    reshapes, copies, splits and joins of rows."""
    shape = (draw(st.integers(1, 3)), draw(st.integers(1, 4)))
    nodes = [mx.sym.Variable("a"), mx.sym.Variable("b")]
    for _ in range(draw(st.integers(1, 7))):
        choice = draw(st.integers(0, 3))
        if choice == 0:
            kind = draw(st.sampled_from(["reshape", "copy", "rows", "stack"]))
            src = nodes[draw(st.integers(0, len(nodes) - 1))]
            rows = draw(st.lists(st.integers(0, shape[0] - 1), max_size=shape[0]))
            nodes.append(_restructured(kind, src, shape, rows))
        elif choice == 1:
            op = draw(st.sampled_from(UNARY))
            src = nodes[draw(st.integers(0, len(nodes) - 1))]
            nodes.append(getattr(mx.sym, op)(src) * 0.5)
        else:
            op = draw(st.sampled_from(BINARY))
            lhs = nodes[draw(st.integers(0, len(nodes) - 1))]
            rhs = nodes[draw(st.integers(0, len(nodes) - 1))]
            nodes.append(getattr(mx.sym, op)(lhs, rhs))
    outputs = [nodes[-1]]
    if draw(st.booleans()) and len(nodes) > 3:
        outputs.append(nodes[draw(st.integers(2, len(nodes) - 2))])
    sym = mx.sym.Group(outputs) if len(outputs) > 1 else outputs[0]
    return sym, shape


def _values(shape, seed):
    rng = np.random.RandomState(seed)
    return {"a": rng.uniform(-0.8, 0.8, shape), "b": rng.uniform(-0.8, 0.8, shape)}


def _run(sym, shape, values, reuse):
    shapes = {n: shape for n in sym.list_arguments()}
    exe = simple_bind(sym, mx.cpu(), grad_req="write", type_dict={n: np.float64 for n in shapes},
                      shapes=shapes, reuse_memory=reuse)
    for name in exe.arg_dict:
        exe.arg_dict[name][:] = values[name]
    outs = [o.asnumpy().copy() for o in exe.forward(is_train=True)]
    heads = [mx.nd.array(np.full(o.shape, 0.5 + i), dtype=np.float64) for i, o in enumerate(outs)]
    exe.backward(heads)
    grads = {k: v.asnumpy().copy() for k, v in exe.grad_dict.items() if v is not None}
    return outs, grads


@settings(max_examples=25)
@given(graphs(), st.integers(0, 1000))
def test_random_graph_plan_is_safe(graph, seed):
    sym, shape = graph
    values = _values(shape, seed)
    planned = _run(sym, shape, values, reuse=True)
    fresh = _run(sym, shape, values, reuse=False)
    for a, b in zip(planned[0], fresh[0]):
        np.testing.assert_array_equal(a, b)
    for name in fresh[1]:
        np.testing.assert_array_equal(planned[1][name], fresh[1][name])


@settings(max_examples=10)
@given(graphs(), st.integers(0, 1000))
def test_random_graph_gradient_matches_numeric(graph, seed):
    sym, shape = graph
    location = {n: v for n, v in _values(shape, seed).items() if n in sym.list_arguments()}
    check_numeric_gradient(sym, location, numeric_eps=1e-5, rtol=1e-4, atol=1e-6,
                           dtype=np.float64)
