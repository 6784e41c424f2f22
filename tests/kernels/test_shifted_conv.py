"""The stride-1 convolution's bound steps (minimod/kernels/shifted_conv.py) against the
reference Convolution: the forward bound there then the backward bound there give the
reference op's output and gradients (to rounding: the products are blocked and the weight and
bias gradients summed in another order), for kernels, pads and dilations that the padded grid
covers; and the executor binds them and trains to the reference's numbers."""
import numpy as np
import pytest

import minimod as mx
from minimod import kernels
from minimod.kernels import registry, shifted_conv
from minimod.ops.convolution import Convolution
from minimod.ops.registry import create_op


def _op(kernel, pad, dilate, num_filter, no_bias=False, stride=(1, 1), num_group=1):
    return create_op("Convolution", {"kernel": str(kernel), "pad": str(pad),
                                     "dilate": str(dilate), "stride": str(stride),
                                     "num_filter": str(num_filter), "no_bias": str(no_bias),
                                     "num_group": str(num_group)})


def _case(rng, dtype, n, c, f, h, w, kernel, pad, dilate, no_bias):
    op = _op(kernel, pad, dilate, f, no_bias)
    ho = h + 2 * pad[0] - dilate[0] * (kernel[0] - 1)
    wo = w + 2 * pad[1] - dilate[1] * (kernel[1] - 1)
    x = rng.randn(n, c, h, w).astype(dtype)
    weight = rng.randn(f, c, *kernel).astype(dtype)
    args = [x, weight] + ([] if no_bias else [rng.randn(f).astype(dtype)])
    out_shapes = [(n, f, ho, wo), (c * kernel[0] * kernel[1] * n * ho * wo,)]
    return op, args, out_shapes


def _run_both(op, args, out_shapes, want_dx=True, want_dw=True):
    """(reference results, bound results): outputs, then gradients [dx, dw, db]."""
    dtype = args[0].dtype
    head = np.random.RandomState(9).randn(*out_shapes[0]).astype(dtype)
    grad_shapes = [args[0].shape if want_dx else None, args[1].shape if want_dw else None]
    grad_shapes += [a.shape for a in args[2:]]
    results = []
    for bound in (False, True):
        outs = [np.full(s, np.nan, dtype) for s in out_shapes]
        grads = [None if s is None else np.full(s, np.nan, dtype) for s in grad_shapes]
        inputs = [None] + args[1:]  # backward never reads the data (backward_inputs)
        if bound:
            run = kernels.bind_forward(np, op, args, [], outs)
            run_back = kernels.bind_backward(np, op, [head], inputs, outs, grads, [])
            assert run is not None and run_back is not None
            run(np, True)
            run_back(np, True)
        else:
            op.forward(np, args, [], outs, True)
            op.backward(np, [head], inputs, outs, grads, [])
        results.append([outs[0]] + grads)
    return results


def _assert_close(reference, bound, dtype):
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    for ref, got in zip(reference, bound):
        if ref is None:
            assert got is None
            continue
        scale = float(np.abs(ref).max())
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("geometry", [
    # n, c, f, h, w, kernel, pad, dilate, no_bias
    (2, 3, 4, 20, 18, (3, 3), (1, 1), (1, 1), False),
    (2, 2, 5, 40, 38, (5, 5), (2, 2), (1, 1), True),
    (2, 4, 3, 30, 40, (3, 2), (2, 0), (2, 3), False),
    (1, 1, 6, 26, 26, (3, 3), (0, 0), (1, 1), False),
])
def test_bound_steps_equal_the_reference(dtype, geometry):
    op, args, out_shapes = _case(np.random.RandomState(0), dtype, *geometry)
    reference, bound = _run_both(op, args, out_shapes)
    _assert_close(reference, bound, dtype)


@pytest.mark.parametrize("want_dx,want_dw", [(False, True), (True, False), (False, False)])
def test_gradients_nobody_wants_are_left_alone(want_dx, want_dw):
    op, args, out_shapes = _case(np.random.RandomState(1), np.float32,
                                 2, 3, 4, 20, 20, (3, 3), (1, 1), (1, 1), False)
    reference, bound = _run_both(op, args, out_shapes, want_dx, want_dw)
    _assert_close(reference, bound, np.float32)


def test_small_maps_with_much_padding(monkeypatch):
    """Below the waste bound the path declines; forced, it still computes the reference."""
    op, args, out_shapes = _case(np.random.RandomState(2), np.float32,
                                 2, 3, 4, 7, 6, (3, 3), (1, 1), (1, 1), False)
    outs = [np.empty(s, np.float32) for s in out_shapes]
    assert kernels.bind_forward(np, op, args, [], outs) is None
    monkeypatch.setattr(shifted_conv, "MAX_WASTE", 100.0)
    monkeypatch.setattr(shifted_conv, "CHUNK_BYTES", 1000)  # many chunks, a short last one
    reference, bound = _run_both(op, args, out_shapes)
    _assert_close(reference, bound, np.float32)


@pytest.mark.parametrize("attrs", [{"stride": (2, 2)}, {"num_group": 2}, {"kernel": (1, 1)}])
def test_declines_other_convolutions(attrs):
    kw = {"kernel": (3, 3), "pad": (1, 1), "dilate": (1, 1), "num_filter": 4}
    kw.update(attrs)
    op = _op(**kw)
    x = np.zeros((2, 4, 20, 20), np.float32)
    weight = np.zeros((4, 4 // kw.get("num_group", 1)) + kw["kernel"], np.float32)
    ho = (20 + 2 - (kw["kernel"][0] - 1) - 1) // kw.get("stride", (1, 1))[0] + 1
    outs = [np.empty((2, 4, ho, ho), np.float32), np.empty(4 * 9 * 2 * 400, np.float32)]
    assert kernels.bind_forward(np, op, [x, weight, np.zeros(4, np.float32)], [], outs) is None


def _train(monkeypatch, fast: bool):
    """Two SGD steps of conv-BN-relu-conv on an executor; its outputs and gradients."""
    if not fast:
        for table in (registry._FORWARD, registry._BACKWARD):
            monkeypatch.delitem(table, Convolution)
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, no_bias=True,
                             name="c1")  # a bias before BatchNorm gets a zero gradient
    net = mx.sym.Activation(mx.sym.BatchNorm(net, fix_gamma=False, name="bn"),
                            act_type="relu")
    net = mx.sym.Convolution(net, kernel=(3, 3), pad=(1, 1), num_filter=3, name="c2")
    exe = net.simple_bind(mx.cpu(), data=(2, 3, 20, 20))
    rng = np.random.RandomState(3)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.randn(*arr.shape).astype(np.float32) * 0.3
    results = []
    for _ in range(2):
        exe.forward(is_train=True)
        exe.backward([mx.nd.array(rng.randn(2, 3, 20, 20).astype(np.float32))])
        results.append(exe.outputs[0].asnumpy())
        results += [exe.grad_dict[k].asnumpy() for k in sorted(exe.grad_dict)]
        for k in ("c1_weight", "c2_weight"):
            exe.arg_dict[k][:] = exe.arg_dict[k].asnumpy() - 0.1 * exe.grad_dict[k].asnumpy()
    return results, [step.run.__module__ for step in exe._steps.train]


def test_executor_binds_the_path_and_matches_the_reference(monkeypatch):
    fast, modules = _train(monkeypatch, fast=True)
    assert modules.count("minimod.kernels.shifted_conv") == 4
    with monkeypatch.context() as m:
        reference, ref_modules = _train(m, fast=False)
    assert "minimod.kernels.shifted_conv" not in ref_modules
    for got, ref in zip(fast, reference):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * float(np.abs(ref).max()))
