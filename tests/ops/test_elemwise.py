"""Elementwise, broadcast, scalar, unary and creation operators (minimod/ops/elemwise.py).

Expected values that are MXNet 1.9.1 conventions (tie gradients, rounding of halves, legacy
shapes) were read off MXNet 1.9.1 itself and are spelled out in the tests named `test_mxnet_*`.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minimod as mx
from minimod.base import DTypeError, OpParamError, ShapeError
from minimod.ops.registry import canonical_name, create_op, get_op_class
from tests.ops.harness import Case, check_case, infer, run_forward

RNG = np.random.RandomState(0)
SHAPE = (2, 3, 5)


def uniform(low, high, shape=SHAPE):
    return RNG.uniform(low, high, shape)


def away_from(values, points, gap=0.1):
    """`values` nudged so that none lies within `gap` of any of `points` (kinks, ties)."""
    values = np.array(values, dtype=np.float64)
    for p in points:
        close = np.abs(values - p) < gap
        values[close] = p + np.where(values[close] >= p, gap, -gap) * 2
    return values


def distinct_pair(shape=SHAPE):
    """lhs, rhs with |lhs - rhs| >= 0.2 everywhere (no ties for max/min/comparisons)."""
    lhs = uniform(-2, 2, shape)
    offset = RNG.uniform(0.2, 1.0, shape) * RNG.choice([-1, 1], shape)
    return lhs, lhs + offset


def zeros_like_all(*inputs):
    return [np.zeros_like(a) for a in inputs]


# ============================================================================ case tables

BINARY_REF = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "power": np.power, "maximum": np.maximum, "minimum": np.minimum, "hypot": np.hypot,
    "mod": np.mod, "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
    "greater_equal": np.greater_equal, "lesser": np.less, "lesser_equal": np.less_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}
SAME_SHAPE_NAME = {
    "add": "elemwise_add", "sub": "elemwise_sub", "mul": "elemwise_mul", "div": "elemwise_div",
}
COMPARISONS = ("equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal",
               "logical_and", "logical_or", "logical_xor")


def binary_inputs(key, shape_l=SHAPE, shape_r=SHAPE):
    if key == "mod":  # lhs / rhs in (1.06, 1.93): away from the jumps at multiples of rhs
        return uniform(1.7, 2.9, shape_l), uniform(1.5, 1.6, shape_r)
    if key == "power":
        return uniform(0.5, 2.0, shape_l), uniform(-1.5, 1.5, shape_r)
    if key == "div":
        return uniform(-2, 2, shape_l), away_from(uniform(-2, 2, shape_r), [0], 0.5)
    if key.startswith("logical"):
        return (RNG.choice([0.0, 1.5, -2.0], shape_l), RNG.choice([0.0, 3.0], shape_r))
    if shape_l == shape_r:
        return distinct_pair(shape_l)
    return uniform(-2, 2, shape_l), uniform(-2, 2, shape_r) + 0.05


def _ref2(fn):
    return lambda a, b: [np.asarray(fn(a, b), dtype=np.result_type(a, b))]


def same_shape_cases():
    cases = []
    for key, fn in BINARY_REF.items():
        name = SAME_SHAPE_NAME.get(key, "_" + key)
        lhs, rhs = binary_inputs(key)
        cases.append(Case(name, {}, [lhs, rhs], _ref2(fn), infer_from=[0], id=name))
        cases.append(Case(name, {}, [lhs, rhs], _ref2(fn), infer_from=[1], check_grad=False,
                          id=name + "-infer-lhs"))
    ties = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 2.0]])
    for key in COMPARISONS:
        cases.append(Case("_" + key, {}, [ties, ties[::-1].copy()], _ref2(BINARY_REF[key]),
                          check_grad=False, id="_%s-ties" % key))
    cases.append(Case("_grad_add", {}, list(distinct_pair()), _ref2(np.add), id="_grad_add"))
    cases.append(Case("elemwise_mul", {}, [uniform(-1, 1).astype(np.float32),
                                           uniform(-1, 1).astype(np.float32)],
                      _ref2(np.multiply), id="elemwise_mul-float32"))
    return cases


BROADCAST_SHAPES = [((2, 3, 5), (3, 1)), ((2, 1, 5), (1, 3, 1)), ((4,), (3, 1)),
                    ((2, 3), (2, 3))]


def broadcast_cases():
    cases = []
    for key, fn in BINARY_REF.items():
        name = "broadcast_" + key
        for shape_l, shape_r in BROADCAST_SHAPES[:2] if key not in COMPARISONS else [
                BROADCAST_SHAPES[0]]:
            lhs, rhs = binary_inputs(key, shape_l, shape_r)
            cases.append(Case(name, {}, [lhs, rhs], _ref2(fn),
                              id="%s-%s-%s" % (name, shape_l, shape_r)))
    for alias in ("broadcast_plus", "broadcast_minus"):
        lhs, rhs = binary_inputs("add", *BROADCAST_SHAPES[2])
        fn = np.add if alias.endswith("plus") else np.subtract
        cases.append(Case(alias, {}, [lhs, rhs], _ref2(fn), id=alias))
    return cases


SCALAR_COMPARISONS = {"_equal_scalar", "_not_equal_scalar", "_greater_scalar",
                      "_greater_equal_scalar", "_lesser_scalar", "_lesser_equal_scalar",
                      "_logical_and_scalar", "_logical_or_scalar", "_logical_xor_scalar"}
SCALAR_CASES = [
    # name, scalar, input, reference
    ("_plus_scalar", 1.5, uniform(-2, 2), lambda x, s: x + s),
    ("_minus_scalar", 2.0, uniform(-2, 2), lambda x, s: x - s),
    ("_rminus_scalar", 2.0, uniform(-2, 2), lambda x, s: s - x),
    ("_mul_scalar", -3.0, uniform(-2, 2), lambda x, s: x * s),
    ("_div_scalar", 4.0, uniform(-2, 2), lambda x, s: x / s),
    ("_rdiv_scalar", 2.0, away_from(uniform(-2, 2), [0], 0.5), lambda x, s: s / x),
    ("_power_scalar", 3.0, uniform(-2, 2), lambda x, s: x ** s),
    ("_mod_scalar", 1.5, uniform(1.6, 2.9), lambda x, s: np.mod(x, s)),
    ("_rmod_scalar", 5.0, uniform(1.8, 2.4), lambda x, s: np.mod(s, x)),
    ("_power_scalar", 0.5, uniform(0.5, 2), lambda x, s: x ** s),
    ("_rpower_scalar", 2.0, uniform(-2, 2), lambda x, s: s ** x),
    ("_maximum_scalar", 0.3, away_from(uniform(-2, 2), [0.3]), np.maximum),
    ("_minimum_scalar", 0.3, away_from(uniform(-2, 2), [0.3]), np.minimum),
    ("_hypot_scalar", 3.0, uniform(-2, 2), np.hypot),
    ("_equal_scalar", 1.0, RNG.choice([0.0, 1.0, 2.0], SHAPE), np.equal),
    ("_not_equal_scalar", 1.0, RNG.choice([0.0, 1.0, 2.0], SHAPE), np.not_equal),
    ("_greater_scalar", 1.0, RNG.choice([0.0, 1.0, 2.0], SHAPE), np.greater),
    ("_greater_equal_scalar", 1.0, RNG.choice([0.0, 1.0, 2.0], SHAPE), np.greater_equal),
    ("_lesser_scalar", 1.0, RNG.choice([0.0, 1.0, 2.0], SHAPE), np.less),
    ("_lesser_equal_scalar", 1.0, RNG.choice([0.0, 1.0, 2.0], SHAPE), np.less_equal),
    ("_logical_and_scalar", 1.0, RNG.choice([0.0, 1.0, 2.0], SHAPE), np.logical_and),
    ("_logical_or_scalar", 0.0, RNG.choice([0.0, 1.0, 2.0], SHAPE), np.logical_or),
    ("_logical_xor_scalar", 1.0, RNG.choice([0.0, 1.0, 2.0], SHAPE), np.logical_xor),
]


def scalar_cases():
    cases = []
    for name, scalar, x, fn in SCALAR_CASES:
        def ref(a, fn=fn, scalar=scalar):
            return [np.asarray(fn(a, scalar), dtype=a.dtype)]
        # comparison inputs sit on the scalar: a numeric gradient would cross the step
        cases.append(Case(name, {"scalar": scalar}, [x], ref,
                          check_grad=name not in SCALAR_COMPARISONS,
                          id="%s-%s" % (name, scalar)))
    return cases


def _erf(x):
    return np.vectorize(math.erf)(x)


def _gamma(x):
    return np.vectorize(math.gamma)(x)


def _gammaln(x):
    return np.vectorize(math.lgamma)(x)


def _mx_round(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _mx_rint(x):
    low = np.floor(x)
    return low + ((x - low) > 0.5)


HALVES = [-0.5, 0.5, -1.5, 1.5, -2.5, 2.5, 0.0, 1.0, -1.0, 2.0, -2.0]

UNARY_CASES = [
    ("exp", uniform(-2, 2), np.exp),
    ("log", uniform(0.3, 3), np.log),
    ("log2", uniform(0.3, 3), np.log2),
    ("log10", uniform(0.3, 3), np.log10),
    ("log1p", uniform(-0.5, 3), np.log1p),
    ("expm1", uniform(-2, 2), np.expm1),
    ("sqrt", uniform(0.3, 3), np.sqrt),
    ("rsqrt", uniform(0.3, 3), lambda x: 1 / np.sqrt(x)),
    ("cbrt", away_from(uniform(-3, 3), [0], 0.3), np.cbrt),
    ("square", uniform(-2, 2), np.square),
    ("abs", away_from(uniform(-2, 2), [0]), np.abs),
    ("sign", away_from(uniform(-2, 2), [0]), np.sign),
    ("round", away_from(uniform(-3, 3), HALVES), _mx_round),
    ("rint", away_from(uniform(-3, 3), HALVES), _mx_rint),
    ("floor", away_from(uniform(-3, 3), HALVES), np.floor),
    ("ceil", away_from(uniform(-3, 3), HALVES), np.ceil),
    ("trunc", away_from(uniform(-3, 3), HALVES), np.trunc),
    ("fix", away_from(uniform(-3, 3), HALVES), np.fix),
    ("negative", uniform(-2, 2), np.negative),
    ("reciprocal", away_from(uniform(-2, 2), [0], 0.4), np.reciprocal),
    ("sigmoid", uniform(-4, 4), lambda x: 1 / (1 + np.exp(-x))),
    ("tanh", uniform(-2, 2), np.tanh),
    ("relu", away_from(uniform(-2, 2), [0]), lambda x: np.maximum(x, 0)),
    ("softsign", uniform(-3, 3), lambda x: x / (1 + np.abs(x))),
    ("sin", uniform(-3, 3), np.sin),
    ("cos", uniform(-3, 3), np.cos),
    ("tan", uniform(-1.2, 1.2), np.tan),
    ("arcsin", uniform(-0.9, 0.9), np.arcsin),
    ("arccos", uniform(-0.9, 0.9), np.arccos),
    ("arctan", uniform(-3, 3), np.arctan),
    ("sinh", uniform(-2, 2), np.sinh),
    ("cosh", uniform(-2, 2), np.cosh),
    ("arcsinh", uniform(-3, 3), np.arcsinh),
    ("arccosh", uniform(1.2, 3), np.arccosh),
    ("arctanh", uniform(-0.9, 0.9), np.arctanh),
    ("degrees", uniform(-3, 3), np.degrees),
    ("radians", uniform(-100, 100), np.radians),
    ("gamma", uniform(0.2, 5), _gamma),
    ("gamma", away_from(uniform(-3.9, -0.1), [-3, -2, -1], 0.15), _gamma),
    ("gammaln", uniform(0.2, 8), _gammaln),
    ("gammaln", away_from(uniform(-3.9, -0.1), [-3, -2, -1], 0.15), _gammaln),
    ("erf", uniform(-4, 4), _erf),
    ("logical_not", RNG.choice([0.0, 1.0, -2.5], SHAPE), lambda x: x == 0),
]


def unary_cases():
    cases = []
    for i, (name, x, fn) in enumerate(UNARY_CASES):
        def ref(a, fn=fn):
            return [np.asarray(fn(a), dtype=a.dtype)]
        cases.append(Case(name, {}, [x], ref, id="%s-%d" % (name, i)))
    return cases


def other_cases():
    x = away_from(uniform(-2, 2), [-0.5, 1.0])
    cond = RNG.choice([0.0, 1.0], SHAPE)
    cond1 = np.array([1.0, 0.0])
    a, b = uniform(-1, 1), uniform(-1, 1)
    small = uniform(-1, 1, (2, 1, 5))
    return [
        Case("clip", {"a_min": -0.5, "a_max": 1.0}, [x], lambda v: [np.clip(v, -0.5, 1.0)]),
        Case("where", {}, [cond, a, b], lambda c, p, q: [np.where(c != 0, p, q)],
             grad_wrt=[1, 2], infer_from=[0, 1], id="where-full"),
        Case("where", {}, [cond1, a, b], lambda c, p, q: [np.where(c[:, None, None] != 0, p, q)],
             grad_wrt=[1, 2], id="where-rows"),
        Case("BlockGrad", {}, [a], lambda v: [v], grad_ref=zeros_like_all),
        Case("stop_gradient", {}, [a], lambda v: [v], grad_ref=zeros_like_all),
        Case("_copy", {}, [a], lambda v: [v]),
        Case("identity", {}, [a], lambda v: [v]),
        Case("Cast", {"dtype": "float64"}, [a.astype(np.float32)],
             lambda v: [v.astype(np.float64)], id="Cast-float64"),
        Case("Cast", {"dtype": "int32"}, [a * 5], lambda v: [v.astype(np.int32)],
             check_grad=False, id="Cast-int32"),
        Case("cast", {"dtype": "float16"}, [a], lambda v: [v.astype(np.float16)],
             check_grad=False, id="cast-float16"),
        Case("add_n", {"num_args": 3}, [a, b, x], lambda p, q, r: [p + q + r], infer_from=[2]),
        Case("ElementWiseSum", {"num_args": 1}, [a], lambda p: [p]),
        Case("zeros_like", {}, [a], lambda v: [np.zeros_like(v)]),
        Case("ones_like", {}, [a], lambda v: [np.ones_like(v)]),
        Case("_zeros", {"shape": (2, 3)}, [], lambda: [np.zeros((2, 3), np.float32)]),
        Case("_ones", {"shape": "(2, 3)", "dtype": "float64"}, [], lambda: [np.ones((2, 3))]),
        Case("_full", {"shape": (3,), "value": 2.5}, [], lambda: [np.full(3, 2.5, np.float32)]),
        Case("_arange", {"start": 1, "stop": 7, "step": 2, "repeat": 2}, [],
             lambda: [np.array([1, 1, 3, 3, 5, 5], np.float32)]),
        Case("_arange", {"start": 4}, [], lambda: [np.arange(4, dtype=np.float32)],
             id="_arange-stop-none"),
        Case("broadcast_to", {"shape": (2, 3, 0)}, [small],
             lambda v: [np.broadcast_to(v, (2, 3, 5))]),
        Case("broadcast_axis", {"axis": (1,), "size": (3,)}, [small],
             lambda v: [np.broadcast_to(v, (2, 3, 5))]),
        Case("broadcast_axes", {"axis": (0, -2), "size": (4, 3)}, [small[:1]],
             lambda v: [np.broadcast_to(v, (4, 3, 5))], id="broadcast_axes-negative"),
        Case("broadcast_like", {}, [small, a], lambda v, w: [np.broadcast_to(v, w.shape)],
             grad_wrt=[0]),
        Case("broadcast_like", {"lhs_axes": (1,), "rhs_axes": (0,)}, [small, uniform(0, 1, (4,))],
             lambda v, w: [np.broadcast_to(v, (2, 4, 5))], grad_wrt=[0], id="broadcast_like-axes"),
    ]


ALL_CASES = (same_shape_cases() + broadcast_cases() + scalar_cases() + unary_cases()
             + other_cases())


@pytest.mark.parametrize("case", ALL_CASES, ids=str)
def test_case(case, ctx):
    with np.errstate(all="ignore"):
        check_case(case, ctx)


# ============================================================================ contract checks

def _inplace_cases():
    for case in ALL_CASES:
        op = create_op(case.op, case.attrs)
        if op.inplace and case.inputs:
            yield case


@pytest.mark.parametrize("case", list(_inplace_cases()), ids=str)
def test_inplace_forward(case):
    """Forward stays correct when the output shares storage with an input it may take over."""
    op = create_op(case.op, case.attrs)
    expected = case.reference(*case.inputs)
    for i, o in op.inplace:
        inputs = [np.array(a) for a in case.inputs]
        out = [inputs[i]]
        with np.errstate(all="ignore"):
            op.forward(np, inputs, [], out, True)
        np.testing.assert_allclose(out[o], expected[o], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", [c for c in ALL_CASES if c.check_grad and c.inputs], ids=str)
def test_backward_reads_only_what_it_declares(case):
    """Backward gives the same gradients when undeclared inputs/outputs are passed as None."""
    op = create_op(case.op, case.attrs)
    with np.errstate(all="ignore"):
        args, aux, outs = run_forward(op, [np.asarray(a, np.float64) for a in case.inputs])
    heads = [np.random.RandomState(1).uniform(-1, 1, o.shape) for o in outs]

    def grads(keep_in, keep_out):
        ins = [a if keep_in == "all" or i in keep_in else None for i, a in enumerate(args)]
        outs_ = [o if keep_out == "all" or i in keep_out else None for i, o in enumerate(outs)]
        g = [np.zeros_like(a) for a in args]
        with np.errstate(all="ignore"):
            op.backward(np, heads, ins, outs_, g, [])
        return g

    for full, lean in zip(grads("all", "all"), grads(op.backward_inputs, op.backward_outputs)):
        np.testing.assert_array_equal(full, lean)


ALIASES = {
    "_Plus": "elemwise_add", "_plus": "elemwise_add", "_add": "elemwise_add",
    "_Minus": "elemwise_sub", "_minus": "elemwise_sub", "_sub": "elemwise_sub",
    "_Mul": "elemwise_mul", "_mul": "elemwise_mul", "_Div": "elemwise_div", "_div": "elemwise_div",
    "_Power": "_power", "_Maximum": "_maximum", "_Minimum": "_minimum", "_Hypot": "_hypot",
    "_Equal": "_equal", "_Not_Equal": "_not_equal", "_Greater": "_greater",
    "_Greater_Equal": "_greater_equal", "_Lesser": "_lesser", "_Lesser_Equal": "_lesser_equal",
    "_Logical_And": "_logical_and", "_Logical_Or": "_logical_or", "_Logical_Xor": "_logical_xor",
    "_PlusScalar": "_plus_scalar", "_MinusScalar": "_minus_scalar",
    "_RMinusScalar": "_rminus_scalar", "_MulScalar": "_mul_scalar", "_DivScalar": "_div_scalar",
    "_RDivScalar": "_rdiv_scalar", "_PowerScalar": "_power_scalar",
    "_RPowerScalar": "_rpower_scalar", "_MaximumScalar": "_maximum_scalar",
    "_MinimumScalar": "_minimum_scalar", "_HypotScalar": "_hypot_scalar",
    "_EqualScalar": "_equal_scalar", "_NotEqualScalar": "_not_equal_scalar",
    "_GreaterScalar": "_greater_scalar", "_GreaterEqualScalar": "_greater_equal_scalar",
    "_LesserScalar": "_lesser_scalar", "_LesserEqualScalar": "_lesser_equal_scalar",
    "_LogicalAndScalar": "_logical_and_scalar", "_LogicalOrScalar": "_logical_or_scalar",
    "_LogicalXorScalar": "_logical_xor_scalar", "broadcast_plus": "broadcast_add",
    "broadcast_minus": "broadcast_sub", "broadcast_axes": "broadcast_axis",
    "stop_gradient": "BlockGrad", "identity": "_copy", "cast": "Cast",
    "ElementWiseSum": "add_n",
}


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_alias_maps_to_canonical_name(alias):
    assert canonical_name(alias) == ALIASES[alias]


def test_no_gradient_flags():
    for name in ("BlockGrad", "_equal", "broadcast_greater", "_lesser_scalar", "sign", "round",
                 "logical_not", "zeros_like", "_zeros"):
        assert get_op_class(name).no_gradient, name
    for name in ("elemwise_add", "broadcast_mul", "_mul_scalar", "exp", "_copy", "clip"):
        assert not get_op_class(name).no_gradient, name


def test_backward_declarations_of_common_ops():
    # exp, sigmoid, tanh, sqrt, relu read only their output; log only its input; add nothing
    for name in ("exp", "sigmoid", "tanh", "sqrt", "relu"):
        cls = get_op_class(name)
        assert (cls.backward_inputs, cls.backward_outputs) == ((), (0,)), name
    assert (get_op_class("log").backward_inputs, get_op_class("log").backward_outputs) == (
        (0,), ())
    add = get_op_class("elemwise_add")
    assert (add.backward_inputs, add.backward_outputs) == ((), ())
    assert get_op_class("elemwise_mul").backward_inputs == (0, 1)


# ============================================================================ MXNet conventions

def _grad(name, attrs, inputs, head=None):
    op = create_op(name, attrs)
    args, aux, outs = run_forward(op, [np.asarray(a, np.float64) for a in inputs])
    heads = [np.ones_like(o) if head is None else head for o in outs]
    g = [np.zeros_like(a) for a in args]
    op.backward(np, heads, args, outs, g, aux)
    return outs, g


def test_mxnet_maximum_minimum_ties_go_to_lhs():
    _, (gl, gr) = _grad("_maximum", {}, [[1.0, 2.0], [1.0, 3.0]])
    assert gl.tolist() == [1, 0] and gr.tolist() == [0, 1]
    _, (gl, gr) = _grad("_minimum", {}, [[1.0, 2.0], [1.0, 3.0]])
    assert gl.tolist() == [1, 1] and gr.tolist() == [0, 0]
    _, (gl, gr) = _grad("broadcast_maximum", {}, [[[1.0, 2.0]], [[1.0], [3.0]]])
    assert gl.tolist() == [[1, 1]] and gr.tolist() == [[0], [2]]
    _, (g,) = _grad("_maximum_scalar", {"scalar": 1.0}, [[1.0, 2.0, 0.0]])
    assert g.tolist() == [1, 1, 0]
    _, (g,) = _grad("_minimum_scalar", {"scalar": 1.0}, [[1.0, 2.0, 0.0]])
    assert g.tolist() == [1, 0, 1]


def test_mxnet_kinks():
    _, (g,) = _grad("clip", {"a_min": 0, "a_max": 1}, [[-1, 0, 0.5, 1, 2.0]])
    assert g.tolist() == [0, 1, 1, 1, 0]
    _, (g,) = _grad("relu", {}, [[-1, 0, 2.0]])
    assert g.tolist() == [0, 0, 1]
    _, (g,) = _grad("abs", {}, [[-1, 0, 2.0]])
    assert g.tolist() == [-1, 0, 1]


def test_mxnet_rounding_of_halves():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])
    (out,), _ = _grad("round", {}, [x])
    assert out.tolist() == [-3, -2, -1, 1, 2, 3]
    (out,), _ = _grad("rint", {}, [x])
    assert out.tolist() == [-3, -2, -1, 0, 1, 2]
    (out,), _ = _grad("fix", {}, [x])
    assert out.tolist() == [-2, -1, 0, 0, 1, 2]


def test_mxnet_comparisons_keep_input_dtype():
    op = create_op("_equal")
    _, out_types = op.infer_type([np.dtype(np.int32), None], [None])
    assert out_types == [np.dtype(np.int32)]
    _, _, (out,) = run_forward(op, [np.array([1, 2], np.int32), np.array([1, 3], np.int32)])
    assert out.dtype == np.int32 and out.tolist() == [1, 0]
    _, _, (out,) = run_forward(create_op("_greater_scalar", {"scalar": 1}),
                               [np.array([0.5, 1.5], np.float32)])
    assert out.dtype == np.float32 and out.tolist() == [0, 1]


def test_mxnet_broadcast_left_pads_ranks():
    op = create_op("broadcast_add")
    assert infer(op, [(2, 3), (3,)])[1] == [(2, 3)]
    assert infer(op, [(2, None), (1, 3)])[1] == [(2, 3)]
    assert infer(op, [(None, 3), (1, 3)])[1] == [(None, 3)]
    assert infer(op, [(2, 3), None])[1] == [None]


def test_same_shape_inference_is_bidirectional():
    op = create_op("elemwise_add")
    in_shapes, out_shapes = infer(op, [(None, 3), (2, None)])
    assert in_shapes == [(2, 3), (2, 3)] and out_shapes == [(2, 3)]
    in_shapes, _ = op.infer_shape([None, None], [(4, 5)])
    assert in_shapes == [(4, 5), (4, 5)]
    in_shapes, _ = create_op("exp").infer_shape([None], [(4, 5)])
    assert in_shapes == [(4, 5)]


def test_zeros_unknown_dims_are_inferred_from_the_consumer():
    op = create_op("_zeros", {"shape": "(0, 3)"})
    assert op.infer_shape([], [None])[1] == [(None, 3)]
    assert op.infer_shape([], [(7, 3)])[1] == [(7, 3)]
    assert op.arguments() == []
    assert create_op("_ones", {}).infer_shape([], [None])[1] == [None]
    with pytest.raises(ShapeError):
        op.infer_shape([], [(7, 4)])
    assert op.infer_type([], [None])[1] == [np.dtype(np.float32)]
    assert create_op("_full", {"value": 1, "dtype": "int64"}).infer_type([], [None])[1] == [
        np.dtype(np.int64)]


def test_cast_types():
    op = create_op("Cast", {"dtype": "int32"})
    assert op.infer_type([np.dtype(np.float32)], [None]) == ([np.dtype(np.float32)],
                                                             [np.dtype(np.int32)])
    assert op.infer_type([None], [None]) == ([None], [np.dtype(np.int32)])


def test_add_n_slots_and_shapes():
    op = create_op("add_n", {"num_args": "4"})
    assert op.arguments() == ["arg0", "arg1", "arg2", "arg3"]
    assert infer(op, [None, (2, 3), None, None])[0] == [(2, 3)] * 4


def test_where_condition_shapes():
    op = create_op("where")
    # as MXNet: nothing is inferred until the condition's shape is known
    assert infer(op, [None, (2, 3), None]) == ([None, (2, 3), None], [None])
    assert infer(op, [(2, 3), (2, None), None]) == ([(2, 3)] * 3, [(2, 3)])
    assert infer(op, [(2,), (2, 3), None])[0][0] == (2,)
    with pytest.raises(ShapeError):
        infer(op, [(3,), (2, 3), None])
    with pytest.raises(ShapeError):
        infer(op, [(2, 3, 1), (2, 3), None])
    _, in_types = None, op.infer_type([np.dtype(np.int32), np.dtype(np.float64), None], [None])
    assert in_types[0] == [np.dtype(np.int32), np.dtype(np.float64), np.dtype(np.float64)]


# ============================================================================ errors

@pytest.mark.parametrize("name, attrs", [
    ("elemwise_add", {"scalar": 1}),                 # unknown parameter
    ("_plus_scalar", {"scalar": "abc"}),             # not a number
    ("_plus_scalar", {"scalr": 1.0}),                # typo
    ("clip", {"a_min": 0}),                          # a_max missing
    ("Cast", {"dtype": "float8"}),                   # not a dtype name
    ("Cast", {}),                                    # dtype missing
    ("add_n", {}),                                   # num_args missing
    ("add_n", {"num_args": 0}),
    ("_full", {"shape": (2,)}),                      # value missing
    ("_zeros", {"shape": "(2, x)"}),
    ("broadcast_axis", {"axis": (0, 1), "size": (2,)}),
    ("broadcast_like", {"lhs_axes": (0,)}),
    ("_arange", {"start": 0, "step": 0}),
])
def test_bad_params_raise_op_param_error(name, attrs):
    with pytest.raises(OpParamError):
        create_op(name, attrs)


@pytest.mark.parametrize("name, attrs, shapes", [
    ("elemwise_add", {}, [(2, 3), (2, 4)]),
    ("_maximum", {}, [(2, 3), (3, 2)]),
    ("elemwise_mul", {}, [(2, 3), (2, 3, 1)]),
    ("broadcast_add", {}, [(2, 3), (2, 4)]),
    ("broadcast_mul", {}, [(5, 3), (4, 2, 1)]),
    ("broadcast_to", {"shape": (2, 3)}, [(3,)]),
    ("broadcast_to", {"shape": (2, 3)}, [(2, 2)]),
    ("broadcast_axis", {"axis": (1,), "size": (4,)}, [(1, 3, 1)]),
    ("broadcast_axis", {"axis": (3,), "size": (4,)}, [(1, 3, 1)]),
    ("broadcast_like", {}, [(2, 3), (4,)]),
    ("add_n", {"num_args": 2}, [(2, 3), (3, 2)]),
])
def test_mismatched_shapes_raise_shape_error(name, attrs, shapes):
    op = create_op(name, attrs)
    with pytest.raises(ShapeError) as err:
        infer(op, shapes)
    assert "(" in str(err.value)


def test_shape_error_names_slots():
    with pytest.raises(ShapeError, match="rhs"):
        infer(create_op("elemwise_add"), [(2, 3), (2, 4)])


def test_dtype_mismatch_raises():
    with pytest.raises(DTypeError):
        create_op("elemwise_add").infer_type([np.dtype(np.float32), np.dtype(np.float64)],
                                             [None])


# ============================================================================ property tests

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)
UNARY_SAFE = [("exp", -2, 2), ("log", 0.3, 3), ("sqrt", 0.3, 3), ("tanh", -2, 2),
              ("sigmoid", -3, 3), ("square", -2, 2), ("negative", -2, 2), ("softsign", -2, 2),
              ("cbrt", 0.2, 3), ("arctan", -2, 2)]
UNARY_REF = {name: ref for name, _, ref in UNARY_CASES}


@given(shape=shapes, spec=st.sampled_from(UNARY_SAFE), seed=st.integers(0, 2 ** 16))
def test_unary_property(shape, spec, seed):
    name, low, high = spec
    x = np.random.RandomState(seed).uniform(low, high, shape)
    op = create_op(name)
    assert infer(op, [shape])[1] == [shape]
    _, _, (out,) = run_forward(op, [x])
    np.testing.assert_allclose(out, UNARY_REF[name](x), rtol=1e-6, atol=1e-8)


@st.composite
def broadcast_pairs(draw):
    out = draw(shapes)
    lhs = tuple(d if draw(st.booleans()) else 1 for d in out)
    rhs = tuple(d if draw(st.booleans()) else 1 for d in out)
    rhs = rhs[draw(st.integers(0, len(rhs) - 1)):]
    if draw(st.booleans()):
        lhs, rhs = rhs, lhs
    return lhs, rhs


@given(pair=broadcast_pairs(), key=st.sampled_from(["add", "sub", "mul", "maximum", "greater",
                                                     "hypot"]), seed=st.integers(0, 2 ** 16))
def test_broadcast_property(pair, key, seed):
    rng = np.random.RandomState(seed)
    lhs, rhs = rng.uniform(-2, 2, pair[0]), rng.uniform(-2, 2, pair[1])
    op = create_op("broadcast_" + key)
    assert infer(op, list(pair))[1] == [np.broadcast_shapes(*pair)]
    _, _, (out,) = run_forward(op, [lhs, rhs])
    np.testing.assert_allclose(out, BINARY_REF[key](lhs, rhs), rtol=1e-12)


@given(pair=broadcast_pairs(), key=st.sampled_from(["add", "sub", "mul", "div"]),
       seed=st.integers(0, 2 ** 16))
def test_broadcast_gradient_property(pair, key, seed):
    rng = np.random.RandomState(seed)
    lhs = rng.uniform(-2, 2, pair[0])
    rhs = rng.uniform(0.5, 2, pair[1]) * rng.choice([-1, 1], pair[1])
    check_case(Case("broadcast_" + key, {}, [lhs, rhs], _ref2(BINARY_REF[key])))


@given(shape=shapes, key=st.sampled_from(["mul", "div", "power", "hypot"]),
       seed=st.integers(0, 2 ** 16))
def test_same_shape_gradient_property(shape, key, seed):
    rng = np.random.RandomState(seed)
    lhs, rhs = rng.uniform(0.5, 2, shape), rng.uniform(0.5, 2, shape)
    name = SAME_SHAPE_NAME.get(key, "_" + key)
    check_case(Case(name, {}, [lhs, rhs], _ref2(BINARY_REF[key])))


def test_erf_at_the_infinities_and_far_out_without_warnings():
    """C's erf (MXNet's): erf(+-inf) = +-1; the series part must not overflow far out."""
    import warnings
    x = mx.nd.array([-np.inf, -40, -2.6, 2.4, 30, np.inf, np.nan])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = mx.nd.erf(x).asnumpy()
    np.testing.assert_allclose(got[:6], [-1, -1, -0.99976397, 0.99931149, 1, 1], rtol=1e-6)
    assert np.isnan(got[6])
