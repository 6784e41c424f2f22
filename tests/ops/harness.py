"""Table-driven operator checks at the op level (no graph, no executor).

A `Case` names an op, its attrs, its inputs (arguments then aux states) and a NumPy reference.
From it `check_case` proves three things:
1. shape inference from the inputs gives exactly the shapes the reference returns, and the
   op's parameter shapes are re-derived when only the `infer_from` inputs are given;
2. forward equals the reference;
3. backward equals a float64 central-difference gradient of sum(head * output) (or, for loss
   heads whose backward ignores the head gradient, the case's `grad_ref`).

`check_case(case, ctx)` with a GPU context runs the case on that device instead: the inputs are
moved there (`backend.to_context`), forward and backward run through `backend.xp_for(ctx)`
(CuPy), and the results, brought back to the host, must equal the reference (forward) and the
host's float64 backward (or `grad_ref`) within the float32 tolerance of the GPU table
(`GPU_TOLERANCES` in tests/conftest.py). Random ops draw their numbers from the host generator
there (moved to the device), so the device run sees the very draws of the reference.
`check_case_on` is that device check for any context; on cpu(0) it checks the harness itself.
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Callable, Optional, Sequence
from unittest import mock

import numpy as np

from minimod import backend
from minimod.ops.registry import create_op
from tests.conftest import GPU_TOLERANCES

TOLERANCES = {
    "forward": dict(rtol=1e-5, atol=1e-6),
    "grad": dict(rtol=1e-4, atol=1e-5),
    # a case run on another device, compared on the host
    "device": dict(rtol=GPU_TOLERANCES["op_vs_float64_cpu"],
                   atol=GPU_TOLERANCES["op_vs_float64_cpu"]),
}


@dataclasses.dataclass
class Case:
    op: str
    attrs: dict
    inputs: Sequence[np.ndarray]
    reference: Callable[..., Sequence[np.ndarray]]
    infer_from: Optional[Sequence[int]] = None   # input indices enough to infer all shapes
    grad_wrt: Optional[Sequence[int]] = None     # inputs to check gradients of (default: all args)
    grad_ref: Optional[Callable[..., Sequence[np.ndarray]]] = None  # loss heads
    is_train: bool = True
    check_grad: bool = True
    eps: float = 1e-6
    id: str = ""

    def __str__(self):
        return self.id or self.op


def infer(op, in_shapes):
    in_shapes = list(in_shapes)
    out_shapes = [None] * op.num_outputs()
    for _ in range(3):
        in_shapes, out_shapes = op.infer_shape(list(in_shapes), list(out_shapes))
    return list(in_shapes), list(out_shapes)


def run_forward(op, inputs, is_train=True, dtype=None):
    n_args = len(op.arguments())
    args = [np.array(a, dtype=dtype or a.dtype) for a in inputs[:n_args]]
    aux = [np.array(a, dtype=dtype or a.dtype) for a in inputs[n_args:]]
    _, out_shapes = infer(op, [a.shape for a in args + aux])
    in_types = [a.dtype for a in args + aux]
    _, out_types = op.infer_type(list(in_types), [None] * op.num_outputs())
    # NaN-filled outputs expose an op that leaves part of its output unwritten
    outs = [np.full(s, np.nan if np.dtype(t).kind == "f" else 0, dtype=t)
            for s, t in zip(out_shapes, out_types)]
    backend.seed(0)
    op.forward(np, args, aux, outs, is_train)
    return args, aux, outs


def run_backward(op, args, aux, outs, heads, wrt):
    in_grads = [np.full(a.shape, np.nan, a.dtype) if i in wrt else None
                for i, a in enumerate(args)]
    nvis = op.num_visible_outputs()
    out_grads = [heads[i] if (i < nvis and op.needs_out_grad) else None for i in range(len(outs))]
    op.backward(np, out_grads, list(args), list(outs), in_grads, list(aux))
    return in_grads


def numeric_grad(op, inputs, heads, index, is_train, eps):
    base = [np.array(a, dtype=np.float64) for a in inputs]
    grad = np.zeros_like(base[index])
    flat = base[index].reshape(-1)
    nvis = op.num_visible_outputs()
    for k in range(flat.size):
        old = flat[k]
        flat[k] = old + eps
        plus = run_forward(op, base, is_train)[2]
        flat[k] = old - eps
        minus = run_forward(op, base, is_train)[2]
        flat[k] = old
        grad.reshape(-1)[k] = sum(np.sum(h * (p - m)) for h, p, m in
                                  zip(heads[:nvis], plus[:nvis], minus[:nvis])) / (2 * eps)
    return grad


def check_case(case: Case, ctx=None):
    """Check `case` on the host, or on `ctx` when it is a GPU context (see the module doc)."""
    if ctx is not None and ctx.device_typeid == 2:
        check_case_on(case, ctx)
        return
    op = create_op(case.op, case.attrs)
    inputs = [np.asarray(a) for a in case.inputs]
    expected = [np.asarray(r) for r in case.reference(*inputs)]
    nvis = op.num_visible_outputs()

    # 1. shape inference
    in_shapes, out_shapes = infer(op, [a.shape for a in inputs])
    assert [tuple(s) for s in out_shapes[:nvis]] == [r.shape for r in expected], (
        "inferred output shapes %s, reference %s" % (out_shapes[:nvis],
                                                      [r.shape for r in expected]))
    if case.infer_from is not None:
        partial = [a.shape if i in case.infer_from else None for i, a in enumerate(inputs)]
        in_partial, out_partial = infer(op, partial)
        assert [None if s is None else tuple(s) for s in in_partial] == [a.shape for a in inputs]
        assert [tuple(s) for s in out_partial[:nvis]] == [r.shape for r in expected]

    # 2. forward
    _, _, outs = run_forward(op, inputs, case.is_train)
    for i, (got, want) in enumerate(zip(outs[:nvis], expected)):
        np.testing.assert_allclose(got, want, err_msg="%s output %d" % (case, i),
                                   **TOLERANCES["forward"])

    # 3. backward in float64
    if not case.check_grad:
        return
    n_args = len(op.arguments())
    wrt = list(range(n_args)) if case.grad_wrt is None else list(case.grad_wrt)
    inputs64 = [np.array(a, dtype=np.float64) if a.dtype.kind == "f" else a for a in inputs]
    args, aux, outs = run_forward(op, inputs64, case.is_train)
    rng = np.random.RandomState(7)
    heads = [rng.uniform(-1, 1, o.shape) for o in outs]
    in_grads = run_backward(op, args, aux, outs, heads, wrt)
    if case.grad_ref is not None:
        want_grads = [np.asarray(g) for g in case.grad_ref(*inputs64)]
        for i in wrt:
            np.testing.assert_allclose(in_grads[i], want_grads[i],
                                       err_msg="%s grad of input %d" % (case, i),
                                       **TOLERANCES["grad"])
        return
    for i in wrt:
        want = numeric_grad(op, inputs64, heads, i, case.is_train, case.eps)
        np.testing.assert_allclose(in_grads[i], want,
                                   err_msg="%s grad of input %d (%s)"
                                   % (case, i, op._in_name(i)), **TOLERANCES["grad"])


# ------------------------------------------------------------------ running on a device

@contextlib.contextmanager
def _host_draws(ctx):
    """Within the block, the ops' generator for `ctx`'s array module draws with the host's
    (seeded) generator and moves the numbers to the device: the device run of a random op then
    sees the draws its NumPy reference made. That covers `backend.uniform` too, which on a GPU
    draws from minimod.device_rng (tests/executor/test_graph_random.py holds that generator to
    its reference)."""
    real, real_uniform = backend.rng, backend.uniform
    xp_dev = backend.xp_for(ctx)
    if xp_dev is np:
        yield
        return

    class _HostDraws:
        def __getattr__(self, name):
            method = getattr(real(np), name)

            def draw(*args, **kwargs):
                value = method(*args, **kwargs)
                if isinstance(value, np.ndarray):
                    return backend.to_context(value, ctx)
                return value
            return draw

    proxy = _HostDraws()

    def uniform(xp, shape):
        return proxy.uniform(0, 1, shape) if xp is xp_dev else real_uniform(xp, shape)
    with mock.patch.object(backend, "rng", lambda xp: proxy if xp is xp_dev else real(xp)), \
            mock.patch.object(backend, "uniform", uniform):
        yield


def run_on(ctx, op, inputs, is_train=True, heads=None, wrt=()):
    """Forward (and, given head gradients, backward) of `op` on `ctx`'s device.

    Returns (outputs, input gradients) as host arrays; a gradient not in `wrt` is None.
    """
    xp = backend.xp_for(ctx)
    n_args = len(op.arguments())
    _, out_shapes = infer(op, [a.shape for a in inputs])
    _, out_types = op.infer_type([a.dtype for a in inputs], [None] * op.num_outputs())
    with backend.device_scope(ctx), _host_draws(ctx):
        dev = [backend.to_context(np.array(a), ctx, copy=True) for a in inputs]
        args, aux = dev[:n_args], dev[n_args:]
        outs = [xp.full(s, np.nan if np.dtype(t).kind == "f" else 0, dtype=t)
                for s, t in zip(out_shapes, out_types)]
        backend.seed(0)
        op.forward(xp, args, aux, outs, is_train)
        grads = None
        if heads is not None:
            in_grads = [xp.full(a.shape, np.nan, a.dtype) if i in wrt else None
                        for i, a in enumerate(args)]
            nvis = op.num_visible_outputs()
            out_grads = [backend.to_context(np.asarray(heads[i], dtype=outs[i].dtype), ctx)
                         if (i < nvis and op.needs_out_grad) else None
                         for i in range(len(outs))]
            op.backward(xp, out_grads, list(args), list(outs), in_grads, list(aux))
            grads = [None if g is None else backend.asnumpy(g) for g in in_grads]
        outs = [backend.asnumpy(o) for o in outs]
    return outs, grads


def check_case_on(case: Case, ctx):
    """`case` run on `ctx`: forward against the reference, backward (float64) against the
    host's backward or `grad_ref`, both within TOLERANCES['device']."""
    op = create_op(case.op, case.attrs)
    inputs = [np.asarray(a) for a in case.inputs]
    expected = [np.asarray(r) for r in case.reference(*inputs)]
    nvis = op.num_visible_outputs()
    tol = TOLERANCES["device"]

    outs, _ = run_on(ctx, op, inputs, case.is_train)
    for i, (got, want) in enumerate(zip(outs[:nvis], expected)):
        assert got.shape == want.shape, "%s output %d on %s: shape %s, reference %s" % (
            case, i, ctx, got.shape, want.shape)
        np.testing.assert_allclose(got, want, err_msg="%s output %d on %s" % (case, i, ctx),
                                   **tol)
    if not case.check_grad:
        return
    n_args = len(op.arguments())
    wrt = list(range(n_args)) if case.grad_wrt is None else list(case.grad_wrt)
    inputs64 = [np.array(a, dtype=np.float64) if a.dtype.kind == "f" else a for a in inputs]
    host_op = create_op(case.op, case.attrs)
    args, aux, host_outs = run_forward(host_op, inputs64, case.is_train)
    rng = np.random.RandomState(7)
    heads = [rng.uniform(-1, 1, o.shape) for o in host_outs]
    if case.grad_ref is not None:
        want_grads = [np.asarray(g) for g in case.grad_ref(*inputs64)]
    else:
        want_grads = run_backward(host_op, args, aux, host_outs, heads, wrt)
    _, got_grads = run_on(ctx, op, inputs64, case.is_train, heads, wrt)
    for i in wrt:
        np.testing.assert_allclose(got_grads[i], want_grads[i],
                                   err_msg="%s grad of input %d (%s) on %s"
                                   % (case, i, op._in_name(i), ctx), **tol)
