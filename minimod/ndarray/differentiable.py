"""NDArray's autograd methods: `attach_grad`, `backward`, `detach` (and `grad`, in
array_base.py). The tape they work on is tape.py; `minimod.autograd` has the scopes."""
from __future__ import annotations

from .. import backend
from ..base import MXNetError
from . import tape
from .array_base import NDArrayBase

__all__ = ["Differentiable"]


class Differentiable:
    """Mixed into NDArray (see the module docstring)."""

    __slots__ = ()

    def attach_grad(self: NDArrayBase, grad_req: str = "write", stype: str | None = None) -> None:
        """Make this array a variable of `autograd.record()`: a zeroed gradient buffer of its
        shape, dtype and context becomes `self.grad`, which `backward()` fills as `grad_req`
        says ('write', 'add' or 'null'). The buffer is dense, a sparse array's too (autograd
        computes on dense values; MXNet's would be sparse, with the same values)."""
        if stype not in (None, "default"):
            raise MXNetError(f"attach_grad: storage type {stype!r} is not supported: minimod's "
                             "gradient buffers are dense")
        dense = self if self.stype == "default" else self.tostype("default")
        with backend.device_scope(self._ctx):
            grad = type(dense)(self._xp.zeros_like(dense._data), self._ctx)
        self._ag = tape.Leaf(grad, grad_req)

    def backward(self: NDArrayBase, out_grad=None, retain_graph: bool = False,
                 train_mode: bool = True) -> None:
        """Gradients of this array (recorded under `autograd.record()`) with respect to the
        variables it was computed from, written into their `grad` buffers; `out_grad` is the
        head gradient (ones when None). `train_mode` is MXNet's: backward arithmetic does not
        depend on it here (an op's backward has no training switch)."""
        tape.backward([self], [out_grad], retain_graph)

    def detach(self: NDArrayBase):
        """The same memory as a new array that carries no gradient."""
        return type(self)(self._data, self._ctx, self._writable)
