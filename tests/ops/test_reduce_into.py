"""Reductions written straight into their planned output (sum, max, min), broadcast gradients
summed straight into the gradient (`reduce_to_shape`) and max/min's gradient mask written into
the gradient: the same bits as the forms that made a temporary first, for every dtype."""
import numpy as np
import pytest

from minimod.ops.helpers import reduce_to_shape
from minimod.ops.registry import create_op


def _bits(a):
    return np.ascontiguousarray(a).tobytes()


def _data(shape, dtype, seed):
    rng = np.random.RandomState(seed)
    if np.dtype(dtype).kind == "i":
        return rng.randint(-50, 50, shape).astype(dtype)
    x = (rng.randn(*shape) * 10).astype(dtype)
    x.flat[3] = np.nan
    x.flat[5] = -0.0
    return x


@pytest.mark.parametrize("name", ["sum", "max", "min"])
@pytest.mark.parametrize("attrs", [{}, {"axis": "1"}, {"axis": "(0, 2)", "keepdims": "True"},
                                   {"axis": "1", "exclude": "True"}])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
def test_reduction_into_its_output_is_the_temporary_forms_bits(name, attrs, dtype):
    op = create_op(name, attrs)
    x = _data((6, 7, 129), dtype, seed=len(attrs))
    _, (out_shape,) = op.infer_shape([x.shape], [None])
    planned = np.full(out_shape, 7, dtype)
    op.forward(np, [x], [], [planned], True)
    strided = np.full(out_shape + (2,), 7, dtype)[..., 0]  # not contiguous: the old form
    op.forward(np, [x], [], [strided], True)
    assert _bits(planned) == _bits(strided)
    expected = getattr(np, name)(x, axis=op._axes(x.shape)).reshape(out_shape).astype(dtype)
    assert _bits(planned) == _bits(expected)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_max_gradient_mask_is_written_in_place(dtype):
    op = create_op("max", {"axis": "1"})
    x = _data((4, 5, 3), dtype, seed=2)
    x[:, 2] = x.max(axis=1)  # ties: every maximal position gets the head gradient
    y = np.empty((4, 3), dtype)
    op.forward(np, [x], [], [y], True)
    dy = _data((4, 3), dtype, seed=3)
    dx = np.full(x.shape, 9, dtype)
    op.backward(np, [dy], [x], [y], [dx], [])
    expected = dy[:, None, :] * (x == y[:, None, :])
    assert _bits(dx) == _bits(expected.astype(dtype))


@pytest.mark.parametrize("shape,grad_shape", [((3, 1, 5), (4, 3, 6, 5)), ((1,), (2, 3)),
                                              ((2, 1), (2, 7))])
def test_reduce_to_shape_into_a_contiguous_gradient_is_the_copy_forms_bits(shape, grad_shape):
    grad = _data(grad_shape, "float32", seed=1)
    contiguous = np.empty(shape, np.float32)
    reduce_to_shape(np, grad, shape, contiguous)
    strided = np.empty(shape + (3,), np.float32)[..., 1]
    reduce_to_shape(np, grad, shape, strided)
    assert _bits(contiguous) == _bits(strided)


@pytest.mark.parametrize("op_name", ["broadcast_mul", "broadcast_div", "broadcast_sub",
                                     "broadcast_power"])
def test_broadcast_gradients_through_the_work_array(op_name):
    op = create_op(op_name, {})
    rng = np.random.RandomState(4)
    lhs = rng.uniform(0.5, 2, (4, 3, 5)).astype(np.float32)
    rhs = rng.uniform(0.5, 2, (4, 1, 5)).astype(np.float32)
    y = np.empty(lhs.shape, np.float32)
    op.forward(np, [lhs, rhs], [], [y], True)
    dy = rng.randn(*y.shape).astype(np.float32)
    grads = [np.empty_like(lhs), np.empty_like(rhs)]
    for _ in range(2):  # the second call reuses the work array of the first
        op.backward(np, [dy], [lhs, rhs], [y], grads, [])
    full = np.empty_like(dy)
    op.spec.grad_rhs(np, dy, lhs, rhs, y, full)
    assert _bits(grads[1]) == _bits(full.sum(axis=1).reshape(rhs.shape))
    op.spec.grad_lhs(np, dy, lhs, rhs, y, full)
    assert _bits(grads[0]) == _bits(full)
