"""ActivationMaxPooling (minimod/kernels/fused.py) writes exactly what Activation (tanh, relu)
followed by max Pooling write: the pooled output, the hidden mask of winning offsets and the
gradient, compared as raw bytes, on windows built to make the pooled-first shortcut wrong
(near ties in tanh, NumPy's non-monotone float32 tanh at 1.5, saturation, NaN, infinities);
and with its data, output or both stored batch-last, the same bytes again.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minimod.kernels.fused import ActivationMaxPooling
from minimod.kernels.layout import batch_last_form
from minimod.ops.activation import Activation
from minimod.ops.pooling import Pooling


def _ops(act_type, kernel=(2, 2)):
    act = Activation({"act_type": act_type})
    pool = Pooling({"kernel": kernel, "stride": kernel, "pool_type": "max"})
    return act, pool, ActivationMaxPooling(act, pool, "act")


def _pooled_shape(shape, kernel):
    return shape[:2] + tuple(n // k for n, k in zip(shape[2:], kernel))


def _unfused(act, pool, x, g):
    a = np.empty_like(x)
    act.forward(np, [x], [], [a], True)
    y = np.full(g.shape, np.nan, x.dtype)
    mask = np.full(g.shape, np.nan, x.dtype)
    pool.forward(np, [a], [], [y, mask], True)
    ga = np.full_like(x, np.nan)
    pool.backward(np, [g], [a], [y, mask], [ga], [])
    dx = np.full_like(x, np.nan)
    act.backward(np, [ga], [x], [a], [dx], [])
    return y, mask, dx


def _fused(op, x, g):
    y = np.full(g.shape, np.nan, x.dtype)
    mask = np.full(g.shape, np.nan, x.dtype)
    op.forward(np, [x], [], [y, mask], True)
    dx = np.full_like(x, np.nan)
    op.backward(np, [g], [None], [y, mask], [dx], [])
    return y, mask, dx


def _same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _last(a):
    return np.ascontiguousarray(np.moveaxis(a, 0, -1))


def _first(a):
    return np.ascontiguousarray(np.moveaxis(a, -1, 0))


def _fused_laid_out(op, x, g):
    """`_fused` through `op` storing its data (mask) and output batch-last as its flags say,
    with the results brought back to (N, C, ...)."""
    xs = _last(x) if op.data_last else x
    y = np.full(_last(g).shape if op.out_last else g.shape, np.nan, x.dtype)
    mask = np.full(_last(g).shape if op.data_last else g.shape, np.nan, x.dtype)
    op.forward(np, [xs], [], [y, mask], True)
    dx = np.full_like(xs, np.nan)
    op.backward(np, [_last(g) if op.out_last else g], [None], [y, mask], [dx], [])
    return (_first(y) if op.out_last else y, _first(mask) if op.data_last else mask,
            _first(dx) if op.data_last else dx)


def _check(act_type, x, kernel=(2, 2), seed=0):
    act, pool, op = _ops(act_type, kernel)
    g = np.random.RandomState(seed).randn(*_pooled_shape(x.shape, kernel)).astype(x.dtype)
    want = _unfused(act, pool, x, g)
    got = _fused(op, x, g)
    # batch-last data, output or both (the layout pass's copies of the op): the same bits
    for data_last, out_last in ((False, True), (True, False), (True, True)):
        laid_out = _fused_laid_out(batch_last_form(op, data_last, out_last), x, g)
        for name, w, o in zip(("output", "mask", "gradient"), got, laid_out):
            assert _same_bits(w, o), (name, data_last, out_last)
    # a window holding a NaN: the same NaN output and mask, but its gradient is NaN at every
    # entry instead of at the NaN entries only (see the op's docstring)
    nan_windows = np.isnan(want[0])
    if nan_windows.any():
        assert np.isnan(got[2][np.isnan(want[2])]).all()
        spread = np.kron(nan_windows, np.ones(kernel, bool)).reshape(want[2].shape)
        got[2][spread] = want[2][spread]
    for name, w, o in zip(("output", "mask", "gradient"), want, got):
        if act_type == "relu":  # max(-0, 0) vs max(0, -0): equal up to the sign of a zero
            assert np.array_equal(w, o, equal_nan=True), name
        else:
            assert _same_bits(w, o), name
    return want


def _windows(rows):
    """(1, 1, 2, 2 * len(rows)) float32 whose 2x2 windows are `rows` (row-major in a window)."""
    rows = np.asarray(rows, dtype=np.float32)
    return rows.reshape(-1, 2, 2).transpose(1, 0, 2).reshape(1, 1, 2, -1).copy()


def test_numpy_tanh_is_not_monotone_where_the_test_says():
    # the reason the fused op cannot simply pool first: a window's largest input need not
    # have the largest tanh (if this NumPy's tanh is monotone there, the next test still
    # checks the window, it just stops being adversarial)
    lo, hi = np.float32(1.4999999), np.float32(1.5)
    if not np.tanh(lo) > np.tanh(hi):
        pytest.skip("this NumPy's float32 tanh is monotone at 1.5")
    y, _, _ = _check("tanh", _windows([[lo, hi, 0, -1]]))
    assert y.ravel()[0] == np.tanh(lo)


@pytest.mark.parametrize("window", [
    [1.4999999, 1.5, 0.0, -1.0],          # non-monotone tanh: the smaller input wins
    [1.5, 1.4999999, 0.0, -1.0],
    [2.0, np.nextafter(np.float32(2.0), np.float32(3)), 0.5, 0.1],  # tanh ties, 1 ulp apart
    [np.nextafter(np.float32(2.0), np.float32(3)), 2.0, 0.5, 0.1],
    [0.3, 0.3, 0.3, 0.3],                 # exact ties: the first wins
    [-0.0, 0.0, -1.0, -2.0],
    [0.0, -0.0, -1.0, -2.0],
    [10.0, 20.0, 9.5, 3.0],               # saturated: tanh = 1 for several entries
    [3.0, np.inf, 20.0, 1.0],
    [-np.inf, -np.inf, -np.inf, -np.inf],
    [np.nan, 1.0, 2.0, 3.0],
    [1.0, 2.0, np.nan, 3.0],
    [-5.0, -3.0, -4.0, -3.0000002],
])
@pytest.mark.parametrize("act_type", ["tanh", "relu"])
def test_adversarial_windows(window, act_type):
    # the window among plain ones, so the fused op takes its per-window path
    rng = np.random.RandomState(1)
    rows = rng.randn(40, 4).astype(np.float32)
    rows[17] = window
    with np.errstate(invalid="ignore"):
        _check(act_type, _windows(rows))


@pytest.mark.parametrize("scale", [0.1, 1.0, 3.0, 30.0])
@pytest.mark.parametrize("act_type", ["tanh", "relu"])
def test_random_layers(scale, act_type):
    # scale 30 saturates most windows: the op recomputes the whole layer the unfused way
    x = (np.random.RandomState(2).randn(4, 3, 12, 10) * scale).astype(np.float32)
    _check(act_type, x)


def test_many_near_ties_recompute_every_window_and_stay_exact():
    # every window holds four floats a few ulps apart: most are flagged, so the op takes its
    # whole-layer path
    rng = np.random.RandomState(3)
    base = rng.uniform(1.0, 3.0, (4, 3, 6, 5, 1)).astype(np.float32)
    steps = rng.randint(0, 4, (4, 3, 6, 5, 4)).astype(np.int32)
    near = (base.view(np.int32) + steps).view(np.float32)  # (..., 4) windows
    x = near.reshape(4, 3, 6, 5, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(4, 3, 12, 10)
    _check("tanh", np.ascontiguousarray(x))


def test_other_window_shapes_and_dtypes():
    rng = np.random.RandomState(4)
    _check("tanh", (rng.randn(2, 3, 9, 9) * 2).astype(np.float32), kernel=(3, 3))
    _check("tanh", (rng.randn(2, 3, 8, 6) * 2).astype(np.float64))
    _check("tanh", (rng.randn(2, 3, 8, 6) * 2).astype(np.float16))
    _check("relu", rng.randn(2, 3, 8, 6).astype(np.float32), kernel=(2, 3))
    _check("tanh", (rng.randn(2, 3, 12) * 2).astype(np.float32), kernel=(2,))
    _check("tanh", (rng.randn(2, 2, 4, 6, 4) * 2).astype(np.float32), kernel=(2, 2, 2))
    # sizes that are not multiples of the window: the last rows and columns are left out
    _check("tanh", (rng.randn(3, 2, 7, 9) * 2).astype(np.float32))
    _check("relu", rng.randn(2, 3, 5, 7).astype(np.float32), kernel=(3, 2))
    _check("tanh", (rng.randn(2, 2, 5, 5, 7) * 2).astype(np.float32), kernel=(2, 2, 3))


@given(st.floats(-12, 12, width=32), st.lists(st.integers(-40, 40), min_size=4, max_size=4),
       st.integers(0, 3))
def test_windows_of_nearby_floats(base, offsets, slot):
    # four entries within 40 ulps of one base: tanh often maps several to one value
    bits = np.array([base], np.float32).view(np.int32)[0]
    window = (np.int32(bits) + np.array(offsets, np.int32)).view(np.float32)
    if not np.all(np.isfinite(window)) or np.any(np.sign(window) != np.sign(base)):
        window = np.full(4, np.float32(base))
    rows = np.random.RandomState(slot).randn(8, 4).astype(np.float32)
    rows[slot] = window
    _check("tanh", _windows(rows), seed=slot)


def test_unfused_nodes_are_the_two_nodes_with_their_arrays():
    act, pool, op = _ops("tanh")
    x = np.random.RandomState(5).randn(2, 2, 4, 4).astype(np.float32)
    y = np.empty((2, 2, 2, 2), np.float32)
    mask = np.empty_like(y)
    op.forward(np, [x], [], [y, mask], False)
    (a_name, a_op, a_in, a_out), (p_name, p_op, p_in, p_out) = op.unfused_nodes(
        np, "pool", [x], [y, mask])
    assert (a_name, a_op, p_name, p_op) == ("act", act, "pool", pool)
    assert a_in[0] is x and np.array_equal(a_out[0], np.tanh(x)) and p_in[0] is a_out[0]
    assert p_out[0] is y and p_out[1] is mask
