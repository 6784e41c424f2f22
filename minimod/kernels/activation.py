"""Activation's bound steps, its fused GPU kernels and its batch-last form.

On NumPy, relu and tanh (the activations of the benchmarked nets) bind their ufunc calls with
their constants resolved. On CuPy, sigmoid's forward and the tanh, sigmoid and relu gradients
run one ElementwiseKernel each (`backend.elementwise`) in place of the 2-4 ufunc passes of
`Activation`, with the same arithmetic in the same order.
"""
from __future__ import annotations

from .. import backend
from ..backend import const
from ..ops.activation import Activation
from .layout import BatchLast, form_of
from .registry import fast_path, plain_numpy

__all__ = ["BatchLastActivation", "FORWARD_KERNELS", "GRADIENT_KERNELS"]

#: activation -> its forward as one kernel (inputs x; output y)
FORWARD_KERNELS = {
    "sigmoid": backend.ElementwiseSpec(
        "sigmoid", "T x", "T y", "y = tanh(x * (T)0.5) * (T)0.5 + (T)0.5;"),
}
#: activation -> its gradient in terms of the output y (inputs g, y; output dx)
GRADIENT_KERNELS = {
    "tanh": backend.ElementwiseSpec("tanh_grad", "T g, T y", "T dx",
                                    "dx = ((T)1 - y * y) * g;"),
    "sigmoid": backend.ElementwiseSpec("sigmoid_grad", "T g, T y", "T dx",
                                       "dx = ((T)1 - y) * y * g;"),
    "relu": backend.ElementwiseSpec("relu_grad", "T g, T y", "T dx",
                                    "dx = (y > (T)0) * g;"),
}


@form_of(Activation)
class BatchLastActivation(BatchLast, Activation):
    """Activation with data and output stored batch-last: being elementwise it runs on them
    as they are, so only the flags (for the monitor and plan listings) differ."""

    transparent = True


def _fused(xp, spec, arrays):
    """`run` calling the kernel of `spec` on `arrays`, or None where there is none (NumPy)."""
    kernel = None if spec is None else backend.elementwise(xp, spec)
    if kernel is None:
        return None

    def run_fused(xp, is_train):
        kernel(*arrays)
    return run_fused


@fast_path(Activation, BatchLastActivation, stage="forward")
def bind_forward(op, xp, inputs, aux, out):
    x, y = inputs[0], out[0]
    act = op.attrs.act_type
    if act not in ("relu", "tanh") or not plain_numpy(xp, x, y):
        return _fused(xp, FORWARD_KERNELS.get(act), (x, y))
    if act == "tanh":
        def run_tanh(xp, is_train):
            xp.tanh(x, out=y)
        return run_tanh
    zero = const(xp, 0, y.dtype)

    def run_relu(xp, is_train):
        xp.maximum(x, zero, out=y)
    return run_relu


@fast_path(Activation, BatchLastActivation, stage="backward")
def bind_backward(op, xp, out_grads, inputs, outputs, in_grads, aux):
    dx, g, y = in_grads[0], out_grads[0], outputs[0]
    act = op.attrs.act_type
    if dx is None:
        return None
    if act not in ("relu", "tanh") or not plain_numpy(xp, dx, g, y):
        return _fused(xp, GRADIENT_KERNELS.get(act), (g, y, dx))
    if act == "tanh":
        one = const(xp, 1, dx.dtype)

        def run_tanh(xp, is_train):
            xp.multiply(y, y, out=dx)
            xp.subtract(one, dx, out=dx)
            xp.multiply(dx, g, out=dx)
        return run_tanh

    zero = const(xp, 0, y.dtype)

    def run_relu(xp, is_train):
        xp.greater(y, zero, out=dx)  # MXNet's mask (y > 0), whatever y holds by now
        xp.multiply(dx, g, out=dx)
    return run_relu
