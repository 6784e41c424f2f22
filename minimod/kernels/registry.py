"""The kernel registry: fast paths and device variants, each registered against op classes.

A fast path is a binder: `binder(op, xp, inputs, aux, out)` for a forward step, or
`binder(op, xp, out_grads, inputs, outputs, in_grads, aux)` for a backward step. It returns
`run(xp, is_train)`, a closure over those very arrays with every decision that depends only on
their shapes, dtypes and layouts taken once, or None when it has nothing faster for them. The
executor binds each step once per memory plan (`executor.steps.bind_steps`), so what a step
costs in Python is paid at bind time. A bound step writes exactly the numbers the op's `forward` or
`backward` writes, and calls the array module's functions through `xp` at run time, as the op
does (so a profiler that swaps `numpy.matmul` for a timed wrapper still sees its calls).

A device variant is a chooser: `chooser(op, ctx, dtype)` returns the op to run on Context `ctx`
for data of `dtype` (a subclass with the same name, slots and attributes whose backward may
read different arrays, such as the cuDNN convolution), or `op` itself. The device pass asks
before the gradient pass and the memory plan.

Both tables are keyed by the exact op class: a subclass (SyncBatchNorm of BatchNorm, the cuDNN
convolution of Convolution) computes other numbers or reads other arrays, so it never inherits
its base's kernels.
"""
from __future__ import annotations

from typing import Callable, Optional

__all__ = ["fast_path", "bind_forward", "bind_backward", "device_variant", "variant_chooser",
           "recast", "plain_numpy"]

_FORWARD: dict = {}
_BACKWARD: dict = {}
_DEVICE: dict = {}


def fast_path(*op_classes: type, stage: str):
    """Register the decorated binder as the fast path of `stage` ('forward' or 'backward')
    for each of `op_classes`."""
    table = {"forward": _FORWARD, "backward": _BACKWARD}[stage]

    def register(binder: Callable) -> Callable:
        for cls in op_classes:
            table[cls] = binder
        return binder
    return register


def variant_chooser(*op_classes: type):
    """Register the decorated chooser as the device-variant choice for each of `op_classes`."""
    def register(chooser: Callable) -> Callable:
        for cls in op_classes:
            _DEVICE[cls] = chooser
        return chooser
    return register


def bind_forward(xp, op, inputs, aux, out) -> Optional[Callable]:
    """The bound fast forward step of `op` on these arrays, or None (run `op.forward`)."""
    binder = _FORWARD.get(type(op))
    return None if binder is None else binder(op, xp, inputs, aux, out)


def bind_backward(xp, op, out_grads, inputs, outputs, in_grads, aux) -> Optional[Callable]:
    """The bound fast backward step of `op` on these arrays, or None (run `op.backward`)."""
    binder = _BACKWARD.get(type(op))
    return None if binder is None else binder(op, xp, out_grads, inputs, outputs, in_grads, aux)


def device_variant(op, ctx, dtype):
    """The op to run on `ctx` for data of `dtype`: a registered variant, or `op` itself."""
    chooser = _DEVICE.get(type(op))
    return op if chooser is None else chooser(op, ctx, dtype)


def recast(op, cls: type):
    """A copy of `op` as an instance of `cls` (a subclass of its class, or a class with the
    same attributes), sharing its parsed attributes and per-instance settings."""
    other = object.__new__(cls)
    other.__dict__.update(op.__dict__)
    return other


def plain_numpy(xp, *arrays) -> bool:
    """Whether a host fast path may take these arrays as they are: NumPy arrays, all
    C-contiguous and of one dtype (so every reshape is a view, and a BLAS call writes into
    its `out=` directly). Anything else runs the op's own forward / backward."""
    if xp.__name__ != "numpy":
        return False
    dtype = arrays[0].dtype
    return all(a.flags.c_contiguous and a.dtype == dtype for a in arrays)
