"""Reductions, arg reductions, topk, dot/batch_dot and index ops (minimod/ops/reduce.py).

Tests named `test_mxnet_*` pin conventions read off MXNet 1.9.1 itself: full reductions give
shape (1,), max/min tie gradients, argmax dtype, take/pick/one_hot index handling.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minimod.base import MXNetError, OpParamError, ShapeError
from minimod.ops.registry import canonical_name, create_op, get_op_class
from tests.ops.harness import Case, check_case, infer, run_forward

RNG = np.random.RandomState(0)
X = RNG.uniform(-2, 2, (2, 3, 5))
POS = RNG.uniform(0.5, 1.5, (2, 3, 5))


def np_reduce(fn, axis=None, keepdims=False, exclude=False):
    """NumPy reference with MXNet's axis conventions and the (1,) full-reduction shape."""
    def ref(x):
        # no axis means every axis, whatever `exclude` says (MXNet 1.9.1)
        axes = tuple(range(x.ndim)) if not axis else tuple(a % x.ndim for a in axis)
        if exclude and axis:
            axes = tuple(a for a in range(x.ndim) if a not in axes)
        out = np.asarray(fn(x, axis=axes, keepdims=keepdims))
        return [out.reshape(1) if out.ndim == 0 else out]
    return ref


def norm2(x, axis, keepdims):
    return np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))


def norm1(x, axis, keepdims):
    return np.sum(np.abs(x), axis=axis, keepdims=keepdims)


REDUCE_FNS = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "nansum": np.nansum,
              "nanprod": np.nanprod, "max": np.max, "min": np.min}
AXIS_VARIANTS = [dict(), dict(axis=(1,)), dict(axis=(0, 2), keepdims=True),
                 dict(axis=(-1,), exclude=True), dict(axis=(), keepdims=True)]


def reduce_cases():
    cases = []
    for name, fn in REDUCE_FNS.items():
        data = POS if name in ("prod", "nanprod") else X
        for v in AXIS_VARIANTS:
            cases.append(Case(name, dict(v), [data], np_reduce(fn, **v), id="%s-%s" % (name, v)))
    for alias, fn in (("sum_axis", np.sum), ("max_axis", np.max), ("min_axis", np.min)):
        cases.append(Case(alias, {"axis": 2}, [X], np_reduce(fn, axis=(2,)), id=alias))
    with_nan = X.copy()
    with_nan[0, 1, 2] = with_nan[1, 2, 0] = np.nan
    for name in ("nansum", "nanprod"):
        cases.append(Case(name, {"axis": (1,)}, [with_nan], np_reduce(REDUCE_FNS[name],
                                                                       axis=(1,)),
                          check_grad=False, id=name + "-nan"))
    for v in (dict(), dict(axis=(1,)), dict(axis=(0, 2), keepdims=True)):
        cases.append(Case("norm", dict(v), [X], np_reduce(norm2, **v), id="norm-%s" % v))
        cases.append(Case("norm", dict(v, ord=1), [X], np_reduce(norm1, **v),
                          id="norm1-%s" % v))
    return cases


def arg_cases():
    data = RNG.permutation(30).reshape(2, 3, 5).astype(np.float64)
    cases = []
    for name, fn in (("argmax", np.argmax), ("argmin", np.argmin)):
        cases += [
            Case(name, {}, [data], lambda x, fn=fn: [np.array([fn(x)], x.dtype)],
                 check_grad=False, id=name + "-all"),
            Case(name, {"axis": 1}, [data], lambda x, fn=fn: [fn(x, axis=1).astype(x.dtype)],
                 check_grad=False, id=name + "-axis1"),
            Case(name, {"axis": -1, "keepdims": True}, [data],
                 lambda x, fn=fn: [fn(x, axis=-1)[..., None].astype(x.dtype)],
                 check_grad=False, id=name + "-keepdims"),
        ]
    cases.append(Case("argmax_channel", {}, [data],
                      lambda x: [np.argmax(x, axis=1).astype(x.dtype)], check_grad=False))
    for k, ascend, axis in ((2, False, -1), (3, True, 1), (4, False, None)):
        def order(x, k=k, ascend=ascend, axis=axis):
            flat = x.reshape(-1) if axis is None else x
            ax = 0 if axis is None else axis
            idx = np.argsort(flat if ascend else -flat, axis=ax, kind="stable")
            idx = np.take(idx, np.arange(k), axis=ax)
            return flat, ax, idx
        attrs = {"k": k, "is_ascend": ascend, "axis": axis}
        cases += [
            Case("topk", attrs, [data], lambda x, order=order: [
                order(x)[2].astype(np.float32)], check_grad=False, id="topk-indices-%d" % k),
            Case("topk", dict(attrs, ret_typ="value"), [data], lambda x, order=order: [
                np.take_along_axis(*order(x)[::2], axis=order(x)[1])],
                id="topk-value-%d" % k),
            Case("topk", dict(attrs, ret_typ="both", dtype="float64"), [data],
                 lambda x, order=order: [np.take_along_axis(*order(x)[::2], axis=order(x)[1]),
                                         order(x)[2].astype(np.float64)], id="topk-both-%d" % k),
        ]
    cases.append(Case("topk", {"k": 2, "ret_typ": "mask"}, [data], lambda x: [
        (x >= np.sort(x, axis=-1)[..., -2:-1]).astype(x.dtype)], check_grad=False,
        id="topk-mask"))
    return cases


def product_cases():
    cases = []
    for ta, tb, ls, rs in [(False, False, (2, 3, 4), (4, 5)), (True, False, (4, 3, 2), (4, 5)),
                           (False, True, (2, 3, 4), (5, 4)), (True, True, (4, 3, 2), (5, 6, 4)),
                           (False, False, (4,), (4,)), (False, False, (4,), (4, 5)),
                           (False, False, (3, 4), (4,))]:
        def ref(a, b, ta=ta, tb=tb):
            out = np.tensordot(a, b, axes=([0 if ta else -1], [-1 if tb else 0]))
            return [out.reshape(1) if out.ndim == 0 else out]
        cases.append(Case("dot", {"transpose_a": ta, "transpose_b": tb},
                          [RNG.uniform(-1, 1, ls), RNG.uniform(-1, 1, rs)], ref,
                          id="dot-%s-%s-%s-%s" % (ta, tb, ls, rs)))
    for ta, tb in [(False, False), (True, False), (False, True), (True, True)]:
        ls = (2, 4, 3) if ta else (2, 3, 4)
        rs = (2, 5, 4) if tb else (2, 4, 5)

        def ref(a, b, ta=ta, tb=tb):
            a = np.swapaxes(a, -1, -2) if ta else a
            b = np.swapaxes(b, -1, -2) if tb else b
            return [a @ b]
        cases.append(Case("batch_dot", {"transpose_a": ta, "transpose_b": tb},
                          [RNG.uniform(-1, 1, ls), RNG.uniform(-1, 1, rs)], ref,
                          id="batch_dot-%s-%s" % (ta, tb)))
    cases.append(Case("batch_dot", {}, [RNG.uniform(-1, 1, (2, 3, 4, 5)),
                                        RNG.uniform(-1, 1, (2, 3, 5, 2))],
                      lambda a, b: [a @ b], id="batch_dot-4d"))
    return cases


def index_cases():
    a = RNG.uniform(-1, 1, (4, 3, 5))
    idx = np.array([[0.0, 3.0], [3.0, 1.7], [-1.0, 7.0]])  # repeats, a fraction, out of range
    cases = []
    for mode in ("clip", "wrap"):
        for axis in (0, 1, -1):
            def ref(x, i, mode=mode, axis=axis):
                size = x.shape[axis]
                k = i.astype(np.int64)
                k = np.clip(k, 0, size - 1) if mode == "clip" else np.mod(k, size)
                return [np.take(x, k, axis=axis)]
            cases.append(Case("take", {"axis": axis, "mode": mode}, [a, idx], ref,
                              grad_wrt=[0], id="take-%s-%d" % (mode, axis)))
    cases.append(Case("take", {"mode": "raise"}, [a, np.array([0.0, 3.0, 3.0])],
                      lambda x, i: [x[[0, 3, 3]]], grad_wrt=[0], id="take-raise"))
    data = RNG.uniform(-1, 1, (2, 3, 5))
    for axis, keepdims, mode in ((-1, False, "clip"), (1, True, "wrap"), (0, False, "clip")):
        ax = axis % 3
        shape = list(data.shape)
        shape[ax] = 1
        index = RNG.randint(-2, data.shape[ax] + 2, shape).astype(np.float64)
        if not keepdims:
            index = index.reshape([d for i, d in enumerate(data.shape) if i != ax])

        def ref(x, i, ax=ax, keepdims=keepdims, mode=mode):
            k = np.expand_dims(i, ax) if not keepdims else i
            k = k.astype(np.int64)
            size = x.shape[ax]
            k = np.clip(k, 0, size - 1) if mode == "clip" else np.mod(k, size)
            out = np.take_along_axis(x, k, axis=ax)
            return [out if keepdims else out.squeeze(ax)]
        # from the data alone the index is inferred without the axis (MXNet's rule), so the
        # kept-axis index of a keepdims case is checked as given, not re-derived
        cases.append(Case("pick", {"axis": axis, "keepdims": keepdims, "mode": mode},
                          [data, index], ref, grad_wrt=[0],
                          infer_from=None if keepdims else [0],
                          id="pick-%d-%s-%s" % (axis, keepdims, mode)))
    for dtype in ("float32", "int32"):
        cases.append(Case("one_hot", {"depth": 4, "on_value": 5, "off_value": -1,
                                      "dtype": dtype},
                          [np.array([[0.0, 3.0, 1.9], [-1.0, 4.0, 2.0]])],
                          lambda i, dtype=dtype: [np.where(
                              i.astype(int)[..., None] == np.arange(4), 5, -1).astype(dtype)],
                          check_grad=False, id="one_hot-" + dtype))
    return cases


ALL_CASES = reduce_cases() + arg_cases() + product_cases() + index_cases()


@pytest.mark.parametrize("case", ALL_CASES, ids=str)
def test_case(case, ctx):
    check_case(case, ctx)


@pytest.mark.parametrize("case", [c for c in ALL_CASES if c.check_grad], ids=str)
def test_backward_reads_only_what_it_declares(case):
    """Backward gives the same gradients when undeclared inputs/outputs are passed as None."""
    op = create_op(case.op, case.attrs)
    inputs = [np.asarray(a, np.float64) for a in case.inputs]
    args, aux, outs = run_forward(op, inputs)
    heads = [np.random.RandomState(1).uniform(-1, 1, o.shape) for o in outs]

    def grads(keep_in, keep_out):
        ins = [a if keep_in == "all" or i in keep_in else None for i, a in enumerate(args)]
        outs_ = [o if keep_out == "all" or i in keep_out else None for i, o in enumerate(outs)]
        g = [np.zeros_like(a) for a in args]
        op.backward(np, heads, ins, outs_, g, [])
        return g

    for full, lean in zip(grads("all", "all"), grads(op.backward_inputs, op.backward_outputs)):
        np.testing.assert_array_equal(full, lean)


# ============================================================================ MXNet conventions

def _grad(name, attrs, inputs, head=None):
    op = create_op(name, attrs)
    args, aux, outs = run_forward(op, [np.asarray(a, np.float64) for a in inputs])
    heads = [np.ones_like(o) if head is None else np.asarray(head, np.float64) for o in outs]
    g = [np.zeros_like(a) for a in args]
    op.backward(np, heads, args, outs, g, aux)
    return outs, g


def test_mxnet_full_reduction_shape_is_1():
    for name in ("sum", "mean", "max", "norm", "argmax"):
        assert infer(create_op(name), [(2, 3)])[1] == [(1,)], name
        assert infer(create_op(name, {"keepdims": True}), [(2, 3)])[1] == [(1, 1)], name
    assert infer(create_op("sum", {"axis": "()"}), [(2, 3)])[1] == [(1,)]
    assert infer(create_op("sum", {"axis": "(0, 1)"}), [(2, 3)])[1] == [(1,)]
    assert infer(create_op("sum", {"axis": 1, "exclude": True}), [(2, 3, 4)])[1] == [(3,)]
    assert infer(create_op("sum", {"axis": (), "exclude": True}), [(2, 3)])[1] == [(1,)]
    assert infer(create_op("sum", {"axis": (0, 1), "exclude": True}), [(2, 3)])[1] == [(2, 3)]
    assert infer(create_op("sum", {"axis": 1}), [(2, None, 4)])[1] == [(2, 4)]
    assert infer(create_op("sum", {"axis": 1}), [None])[1] == [None]


def test_mxnet_max_min_gradient_goes_to_every_tie():
    _, (g,) = _grad("max", {"axis": 1}, [[[1, 3, 3], [2, 2, 1.0]]])
    assert g.tolist() == [[0, 1, 1], [1, 1, 0]]
    _, (g,) = _grad("min", {}, [[[1, 3, 1], [2, 2, 1.0]]])
    assert g.tolist() == [[1, 0, 1], [0, 0, 1]]


def test_prod_gradient_at_zeros():
    # MXNet gives NaN (out / x) at a zero; minimod gives the product of the other factors
    _, (g,) = _grad("prod", {"axis": 1}, [[[0, 2, 3], [1, 0, 0.0], [1, 2, 3]]])
    assert g.tolist() == [[6, 0, 0], [0, 0, 0], [6, 3, 2]]


def test_norm_gradient_at_zero_is_zero():
    _, (g,) = _grad("norm", {}, [np.zeros((2, 2))])
    assert g.tolist() == [[0, 0], [0, 0]]


def test_mxnet_argmax_keeps_input_dtype_and_first_tie():
    op = create_op("argmax", {"axis": 1})
    assert op.infer_type([np.dtype(np.int32)], [None])[1] == [np.dtype(np.int32)]
    _, _, (out,) = run_forward(op, [np.array([[1, 5, 5]], np.float32)])
    assert out.dtype == np.float32 and out.tolist() == [1.0]
    _, _, (out,) = run_forward(create_op("argmin", {"axis": 1}), [np.array([[3, 1, 1.0]])])
    assert out.tolist() == [1.0]
    assert get_op_class("argmax").no_gradient


def test_mxnet_argmax_channel_reduces_axis_1():
    assert infer(create_op("argmax_channel"), [(2, 3, 4)])[1] == [(2, 4)]


def test_mxnet_topk_slots():
    both = create_op("topk", {"k": 2, "ret_typ": "both"})
    assert both.output_names("t") == ["t_output0", "t_output1"]
    assert both.infer_type([np.dtype(np.float64)], [None, None])[1] == [
        np.dtype(np.float64), np.dtype(np.float32)]
    assert create_op("topk", {"k": 2, "ret_typ": "value"}).output_names("t") == ["t_output0"]
    assert create_op("topk", {"k": 2}).output_names("t") == ["t_output"]
    assert infer(create_op("topk", {"k": 2, "axis": None}), [(2, 4)])[1] == [(2,)]
    _, (g,) = _grad("topk", {"k": 2, "ret_typ": "value"}, [[[1, 3, 3, 2], [5, 5, 5, 0.0]]],
                    head=[[1, 2], [3, 4]])
    assert g.tolist() == [[0, 1, 2, 0], [3, 4, 0, 0]]


def test_mxnet_take_modes():
    a = np.array([1.0, 2.0, 3.0])
    idx = np.array([-1, 0, 5, 1.7, 2.5, -0.5])
    _, _, (out,) = run_forward(create_op("take"), [a, idx])
    assert out.tolist() == [1, 1, 3, 2, 3, 1]
    idx = np.array([-1, 0, 5, 1.7, -4, -0.5])
    _, _, (out,) = run_forward(create_op("take", {"mode": "wrap"}), [a, idx])
    assert out.tolist() == [3, 1, 3, 2, 3, 1]
    with pytest.raises(MXNetError):
        run_forward(create_op("take", {"mode": "raise"}), [a, np.array([0.0, 5.0])])
    assert infer(create_op("take", {"axis": 1}), [(2, 3, 4), (3, 2)])[1] == [(2, 3, 2, 4)]
    op = create_op("take")
    assert op.infer_type([np.dtype(np.float64), np.dtype(np.int32)], [None]) == (
        [np.dtype(np.float64), np.dtype(np.int32)], [np.dtype(np.float64)])


def test_mxnet_take_gradient_accumulates_repeats():
    _, (g, gi) = _grad("take", {}, [np.arange(6.0).reshape(3, 2), [0, 0, 2.0]])
    assert g.tolist() == [[2, 2], [0, 0], [1, 1]] and gi.tolist() == [0, 0, 0]


def test_mxnet_pick_modes():
    x = np.array([[1.0, 2, 3], [4, 5, 6]])
    assert run_forward(create_op("pick"), [x, np.array([0, 5.0])])[2][0].tolist() == [1, 6]
    assert run_forward(create_op("pick"), [x, np.array([-1, 1.6])])[2][0].tolist() == [1, 5]
    assert run_forward(create_op("pick", {"mode": "wrap"}),
                       [x, np.array([-1, 4.0])])[2][0].tolist() == [3, 5]
    assert run_forward(create_op("pick", {"axis": 0}),
                       [x, np.array([0, 1, 1.0])])[2][0].tolist() == [1, 5, 6]
    _, (g, _) = _grad("pick", {}, [x, [0, 7.0]])
    assert g.tolist() == [[1, 0, 0], [0, 0, 1]]
    # as MXNet 1.9.1: with keepdims the index is still inferred without the picked axis
    assert infer(create_op("pick", {"keepdims": True}), [(2, 3), None]) == (
        [(2, 3), (2,)], [(2, 1)])
    assert create_op("pick").infer_shape([None, None], [(2, 4)])[0] == [(2, 4, None), (2, 4)]


def test_mxnet_one_hot():
    _, _, (out,) = run_forward(create_op("one_hot", {"depth": 3}),
                               [np.array([0, 2, -1, 5, 1.7])])
    assert out.dtype == np.float32
    assert out.tolist() == [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0], [0, 1, 0]]
    op = create_op("one_hot", {"depth": 3, "dtype": "int32"})
    assert op.infer_type([np.dtype(np.float64)], [None])[1] == [np.dtype(np.int32)]
    assert op.infer_shape([None], [(4, 3)])[0] == [(4,)]


def test_dot_inference_fills_the_contracted_dim():
    assert infer(create_op("dot"), [(2, None), (4, 5)]) == ([(2, 4), (4, 5)], [(2, 5)])
    assert infer(create_op("dot"), [(2, 4), None])[1] == [None]


def test_aliases():
    assert canonical_name("sum_axis") == "sum"
    assert canonical_name("max_axis") == "max"
    assert canonical_name("min_axis") == "min"


# ============================================================================ errors

@pytest.mark.parametrize("name, attrs", [
    ("sum", {"axis": "x"}), ("sum", {"keepdim": True}), ("norm", {"ord": 3}),
    ("norm", {"out_dtype": "float8"}), ("argmax", {"axis": (0, 1)}), ("topk", {"k": 0}),
    ("topk", {"ret_typ": "values"}), ("one_hot", {}), ("one_hot", {"depth": 0}),
    ("take", {"mode": "nearest"}), ("pick", {"mode": "raise"}), ("pick", {"axis": None}),
    ("dot", {"transpose_c": True}), ("batch_dot", {"forward_stype": "dense"}),
])
def test_bad_params_raise_op_param_error(name, attrs):
    with pytest.raises(OpParamError):
        create_op(name, attrs)


@pytest.mark.parametrize("name, attrs, shapes", [
    ("sum", {"axis": 3}, [(2, 3, 4)]),
    ("sum", {"axis": (1, -2)}, [(2, 3, 4)]),
    ("argmax", {"axis": -4}, [(2, 3, 4)]),
    ("dot", {}, [(2, 3), (4, 5)]),
    ("dot", {"transpose_b": True}, [(2, 3), (3, 5)]),
    ("dot", {"transpose_a": True}, [(4,), (4,)]),
    ("batch_dot", {}, [(2, 3, 4), (3, 4, 5)]),
    ("batch_dot", {}, [(2, 3, 4), (2, 5, 5)]),
    ("batch_dot", {}, [(3, 4), (4, 5)]),
    ("topk", {"k": 6}, [(2, 5)]),
    ("pick", {}, [(2, 3), (3,)]),
    ("one_hot", {"depth": 3}, [(2,)]),
])
def test_mismatched_shapes_raise_shape_error(name, attrs, shapes):
    op = create_op(name, attrs)
    with pytest.raises(ShapeError):
        if name == "one_hot":
            op.infer_shape([shapes[0]], [(2, 4)])
        else:
            infer(op, shapes)


# ============================================================================ property tests

@st.composite
def reductions(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    axes = draw(st.lists(st.integers(-len(shape), len(shape) - 1), unique_by=lambda a: a % len(
        shape), max_size=len(shape)))
    return shape, tuple(axes), draw(st.booleans()), draw(st.booleans())


@given(spec=reductions(), name=st.sampled_from(["sum", "mean", "max", "min", "prod", "nansum"]),
       seed=st.integers(0, 2 ** 16))
def test_reduction_property(spec, name, seed):
    shape, axis, keepdims, exclude = spec
    x = np.random.RandomState(seed).uniform(0.5, 1.5, shape)
    attrs = {"axis": axis, "keepdims": keepdims, "exclude": exclude}
    op = create_op(name, attrs)
    want = np_reduce(REDUCE_FNS[name], axis, keepdims, exclude)(x)[0]
    assert infer(op, [shape])[1] == [want.shape]
    _, _, (out,) = run_forward(op, [x])
    np.testing.assert_allclose(out, want, rtol=1e-12)


@given(spec=reductions(), name=st.sampled_from(["sum", "mean", "max", "prod"]),
       seed=st.integers(0, 2 ** 16))
def test_reduction_gradient_property(spec, name, seed):
    shape, axis, keepdims, exclude = spec
    x = np.random.RandomState(seed).permutation(int(np.prod(shape))).reshape(shape) / 7.0 + 0.5
    check_case(Case(name, {"axis": axis, "keepdims": keepdims, "exclude": exclude}, [x],
                    np_reduce(REDUCE_FNS[name], axis, keepdims, exclude)))


@given(m=st.integers(1, 4), k=st.integers(1, 4), n=st.integers(1, 4), batch=st.integers(1, 3),
       ta=st.booleans(), tb=st.booleans())
def test_batch_dot_property(m, k, n, batch, ta, tb):
    rng = np.random.RandomState(m * 100 + k * 10 + n)
    a = rng.uniform(-1, 1, (batch, k, m) if ta else (batch, m, k))
    b = rng.uniform(-1, 1, (batch, n, k) if tb else (batch, k, n))

    def ref(x, y):
        x = np.swapaxes(x, -1, -2) if ta else x
        y = np.swapaxes(y, -1, -2) if tb else y
        return [x @ y]
    check_case(Case("batch_dot", {"transpose_a": ta, "transpose_b": tb}, [a, b], ref))
