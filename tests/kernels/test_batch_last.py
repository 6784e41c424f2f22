"""Convolution and FullyConnected with their data, output or both stored batch-last (their
batch-last forms in minimod/kernels/, as the layout pass sets them) compute what the
batch-first ops compute.
Convolution: the same bytes where the batch-first op works batch-last too (outputs narrower
than `CN_MIN_WIDTH`), and the same values up to the order of GEMM sums where it works
channels-batch. FullyConnected: the same values up to the order of sums (its GEMMs run on the
transposed operands), and the same bytes on its bound and general paths. (The fused
activation-pooling op's layouts are checked in test_fused_act_pool.py.)"""
import numpy as np
import pytest

from minimod import kernels
from minimod.kernels.layout import batch_last_class, batch_last_form, from_batch_last, to_batch_last
from minimod.ops.conv_helpers import CN_MIN_WIDTH
from minimod.ops.convolution import Convolution
from minimod.ops.dense import FullyConnected

LAYOUTS = ((False, True), (True, False), (True, True))


def _flags(op):
    """(data_last, out_last) of a reference op (neither) or of a batch-last form."""
    return getattr(op, "data_last", False), getattr(op, "out_last", False)


def _last(a):
    return np.ascontiguousarray(np.moveaxis(a, 0, -1))


def _first(a):
    return np.ascontiguousarray(np.moveaxis(a, -1, 0))


def _run(op, x, w, b, g):
    """Forward and backward of `op` on batch-first x and g (converted to the op's layouts);
    the output and gradients come back batch-first. Outputs start as NaN, so anything left
    unwritten shows."""
    data_last, out_last = _flags(op)
    xs = _last(x) if data_last else x
    gs = _last(g) if out_last else g
    inputs = [xs, w] if b is None else [xs, w, b]
    y = np.full(gs.shape, np.nan, x.dtype)
    _, out_shapes = op.infer_shape([xs.shape, w.shape] + ([] if b is None else [b.shape]),
                                   [None, None])
    cols = np.full(out_shapes[1], np.nan, x.dtype)
    op.forward(np, inputs, [], [y, cols], True)
    grads = [np.full_like(a, np.nan) for a in inputs]
    op.backward(np, [gs], inputs, [y, cols], grads, [])
    dx = _first(grads[0]) if data_last else grads[0]
    return [_first(y) if out_last else y, dx] + grads[1:]


def _case(kw, data_shape, seed=0):
    rng = np.random.RandomState(seed)
    op = Convolution(kw)
    in_shapes, out_shapes = op.infer_shape([data_shape, None] + ([] if kw.get("no_bias")
                                                                 else [None]), [None, None])
    x = rng.randn(*data_shape).astype(np.float32)
    w = rng.randn(*in_shapes[1]).astype(np.float32)
    b = None if kw.get("no_bias") else rng.randn(*in_shapes[2]).astype(np.float32)
    g = rng.randn(*out_shapes[0]).astype(np.float32)
    return op, x, w, b, g


NARROW = [  # outputs narrower than CN_MIN_WIDTH: the batch-first op works batch-last too
    ({"kernel": (5, 5), "num_filter": 6}, (4, 3, 12, 12)),                       # LeNet's conv2
    ({"kernel": (3, 3), "num_filter": 4, "pad": (1, 2)}, (3, 2, 7, 9)),          # padded
    ({"kernel": (3, 3), "num_filter": 4, "stride": (2, 1), "dilate": (1, 2)}, (2, 3, 11, 10)),
    ({"kernel": (3, 3), "num_filter": 6, "num_group": 3, "no_bias": True}, (2, 6, 8, 8)),
    ({"kernel": (3,), "num_filter": 5, "pad": (1,)}, (3, 2, 9)),                 # 1-D
    ({"kernel": (2, 3, 2), "num_filter": 3, "stride": (1, 2, 1)}, (2, 2, 4, 7, 5)),  # 3-D
]


@pytest.mark.parametrize("kw,data_shape", NARROW)
def test_batch_last_is_the_same_bytes_where_the_work_layout_is(kw, data_shape):
    op, x, w, b, g = _case(kw, data_shape)
    want = _run(op, x, w, b, g)
    assert not any(np.isnan(a).any() for a in want)
    for data_last, out_last in LAYOUTS:
        got = _run(batch_last_form(op, data_last, out_last), x, w, b, g)
        for name, a, o in zip(("output", "data grad", "weight grad", "bias grad"), want, got):
            assert a.tobytes() == o.tobytes(), (name, data_last, out_last)


def test_wide_outputs_change_only_the_order_of_sums():
    # LeNet's conv1: a 24-wide output works channels-batch batch-first, batch-last beside
    # batch-last data; the three batch-last variants agree to the byte among themselves
    kw, shape = {"kernel": (5, 5), "num_filter": 8, "pad": (1, 1)}, (6, 2, 26, 26)
    assert shape[-1] + 2 - 4 >= CN_MIN_WIDTH
    op, x, w, b, g = _case(kw, shape)
    want = _run(op, x, w, b, g)
    got = [_run(batch_last_form(op, d, o), x, w, b, g) for d, o in LAYOUTS]
    for variant in got:
        for a, o in zip(want, variant):
            np.testing.assert_allclose(o, a, rtol=1e-5, atol=1e-5 * np.abs(a).max())
        for a, o in zip(got[0], variant):
            assert a.tobytes() == o.tobytes()


def test_shapes_are_inferred_in_the_stored_layout():
    op = Convolution({"kernel": (5, 5), "num_filter": 50})
    laid_out = batch_last_form(op, True, True)
    assert type(op) is Convolution and _flags(op) == (False, False)  # left as it was
    ins, outs = laid_out.infer_shape([(20, 12, 12, 64), None, None], [None, None])
    assert ins == [(20, 12, 12, 64), (50, 20, 5, 5), (50,)]
    assert outs[0] == (50, 8, 8, 64) and outs[1] == (20 * 25 * 8 * 8 * 64,)
    # backwards from a batch-last output with the batch unknown
    ins, outs = batch_last_form(op, True, False).infer_shape([(20, 12, 12, None), None, None],
                                                        [(64, 50, 8, 8), None])
    assert ins[0] == (20, 12, 12, 64)
    assert to_batch_last((64, 20, 12, 12)) == (20, 12, 12, 64)
    assert from_batch_last((20, 12, 12, 64)) == (64, 20, 12, 12)
    assert to_batch_last(None) is None and from_batch_last(None) is None


def test_as_written_shows_the_arrays_in_mxnets_layout():
    op = batch_last_form(Convolution({"kernel": (3, 3), "num_filter": 4}), True, True)
    x = np.arange(2 * 3 * 5 * 5, dtype=np.float32).reshape(3, 5, 5, 2)
    y = np.zeros((4, 3, 3, 2), np.float32)
    cols = np.zeros(3 * 9 * 9 * 2, np.float32)
    ins, outs = op.as_written(np, [x, None], [y, cols])
    assert ins[0].shape == (2, 3, 5, 5) and np.shares_memory(ins[0], x)
    assert np.array_equal(ins[0], np.moveaxis(x, -1, 0))
    assert outs[0].shape == (2, 4, 3, 3) and outs[1] is cols
    assert op.layout_note() == " [batch-last in, out]"
    plain = batch_last_form(Convolution({"kernel": (3, 3), "num_filter": 4}), False, False)
    assert plain.layout_note() == ""


# ----------------------------------------------------------------------------- FullyConnected

def _run_fc(op, x, w, b, g, bound):
    """Forward and backward of FullyConnected `op` through its bound steps or its general
    forward / backward, on batch-first x and g; results come back batch-first."""
    data_last, out_last = _flags(op)
    xs = _last(x) if data_last else x
    gs = np.ascontiguousarray(g.T) if out_last else g
    inputs = [xs, w] if b is None else [xs, w, b]
    y = np.full(gs.shape, np.nan, x.dtype)
    grads = [np.full_like(a, np.nan) for a in inputs]
    if bound:
        kernels.bind_forward(np, op, inputs, [], [y])(np, True)
        kernels.bind_backward(np, op, [gs], inputs, [y], grads, [])(np, True)
    else:
        op.forward(np, inputs, [], [y], True)
        op.backward(np, [gs], inputs, [y], grads, [])
    dx = _first(grads[0]) if data_last else grads[0]
    return [np.ascontiguousarray(y.T) if out_last else y, dx] + grads[1:]


@pytest.mark.parametrize("data_shape,no_bias", [
    ((32, 20), False),        # an MLP layer
    ((6, 5, 3, 3), False),    # reading a (C, H, W, N) pooling output, flattened
    ((9, 7), True),
])
def test_fully_connected_in_every_layout(data_shape, no_bias):
    rng = np.random.RandomState(1)
    op = FullyConnected({"num_hidden": 11, "no_bias": no_bias})
    x = rng.randn(*data_shape).astype(np.float32)
    w = rng.randn(11, int(np.prod(data_shape[1:]))).astype(np.float32)
    b = None if no_bias else rng.randn(11).astype(np.float32)
    g = rng.randn(data_shape[0], 11).astype(np.float32)
    want = _run_fc(op, x, w, b, g, bound=True)
    assert not any(np.isnan(a).any() for a in want)
    for a, o in zip(want, _run_fc(op, x, w, b, g, bound=False)):
        assert a.tobytes() == o.tobytes()
    for data_last, out_last in LAYOUTS:
        laid_out = batch_last_form(op, data_last, out_last)
        got = _run_fc(laid_out, x, w, b, g, bound=True)
        general = _run_fc(laid_out, x, w, b, g, bound=False)
        names = ("output", "data grad", "weight grad", "bias grad")
        for name, a, o, o2 in zip(names, want, got, general):
            assert o.shape == a.shape, name
            np.testing.assert_allclose(o, a, rtol=1e-5, atol=1e-5 * np.abs(a).max(),
                                       err_msg="%s %s" % (name, (data_last, out_last)))
            assert o.tobytes() == o2.tobytes(), (name, data_last, out_last)


def test_fully_connected_shapes_in_the_stored_layout():
    op = FullyConnected({"num_hidden": 500})
    ins, outs = batch_last_form(op, True, True).infer_shape([(50, 4, 4, 64), None, None], [None])
    assert ins == [(50, 4, 4, 64), (500, 800), (500,)] and outs == [(500, 64)]
    ins, outs = batch_last_form(op, False, True).infer_shape([(64, 800), None, None], [None])
    assert outs == [(500, 64)]
    ins, outs = batch_last_form(op, True, False).infer_shape([(800, None), None, None], [(64, 500)])
    assert ins[0] == (800, 64) and ins[1] == (500, 800)
    assert batch_last_class(op).applies(op)
    # flatten=False keeps every leading axis: there is no one batch axis to move
    other = FullyConnected({"num_hidden": 5, "flatten": False})
    assert not batch_last_class(other).applies(other)
