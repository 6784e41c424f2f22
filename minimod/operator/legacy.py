"""MXNet 1.x's legacy Python operators, `mx.operator.PythonOp`, `NumpyOp` and `NDArrayOp`, as
thin adapters over the CustomOp machinery (custom.py).

A legacy operator is an object: subclass NumpyOp (the callbacks see NumPy arrays) or NDArrayOp
(they see NDArrays), override `forward(in_data, out_data)`, `backward(out_grad, in_data,
out_data, in_grad)`, and where needed `list_arguments`, `list_outputs`, `infer_shape` (which
returns two lists, argument shapes and output shapes) and `need_top_grad`; then
`op.get_symbol(x, name=...)` puts it in a graph. The defaults are an identity with one input
`data` and one output `output`.

`get_symbol` registers one CustomOpProp for the object under a private op_type
("_legacy_python_op_<n>"), so the node is a `Custom` node: the symbol's JSON names that
op_type, which only this process knows (MXNet's `_Native`/`_NDArray` nodes likewise hold a
pointer to the Python object). The NumPy callbacks receive copies of the inputs and write
into NumPy outputs that are then copied into the executor's arrays; writes into `in_data`
are not seen by the graph.
"""
from __future__ import annotations

import itertools

import numpy as np

from .. import symbol as _symbol
from .custom import CustomOp, CustomOpProp, register

__all__ = ["PythonOp", "NumpyOp", "NDArrayOp"]

_COUNTER = itertools.count()


class PythonOp:
    """Base of the legacy Python operators; `need_top_grad` is what the default
    `need_top_grad()` returns (False makes the operator a loss head)."""

    #: whether the callbacks get NumPy arrays (True) or NDArrays (False)
    _numpy = True

    def __init__(self, need_top_grad: bool = True):
        self.info_ = None
        self.need_top_grad_ = need_top_grad

    def __call__(self, *args, **kwargs):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        """A symbol applying this operator to the input symbols (positional, or by the
        names of `list_arguments()`); `name=` names the node."""
        if self.info_ is None:
            self.info_ = "_legacy_python_op_%d" % next(_COUNTER)
            register(self.info_)(_adapter_prop(self))
        return _symbol.Custom(*args, op_type=self.info_, **kwargs)

    def forward(self, in_data, out_data):
        """Default: out_data[0] = in_data[0]."""
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        """Default: in_grad[0] = out_grad[0]."""
        in_grad[0][:] = out_grad[0]

    def infer_shape(self, in_shape):
        """(argument shapes, output shapes); default: one output of the first input's shape."""
        return in_shape, [in_shape[0]]

    def list_outputs(self):
        return ["output"]

    def list_arguments(self):
        return ["data"]

    def need_top_grad(self):
        return self.need_top_grad_


class NumpyOp(PythonOp):
    """A legacy operator whose callbacks read and write NumPy arrays."""

    _numpy = True


class NDArrayOp(PythonOp):
    """A legacy operator whose callbacks read and write NDArrays (on the executor's
    device); `declare_backward_dependency` says what backward reads."""

    _numpy = False

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        deps = list(out_grad) if self.need_top_grad() else []
        return deps + list(in_data) + list(out_data)


def _adapter_prop(op: PythonOp) -> type:
    """A CustomOpProp class declaring `op` (its slots, shapes, head gradient)."""

    class LegacyProp(CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=op.need_top_grad())

        def list_arguments(self):
            return op.list_arguments()

        def list_outputs(self):
            return op.list_outputs()

        def infer_shape(self, in_shape):
            args, outs = op.infer_shape(in_shape)[:2]
            return args, outs, []

        def declare_backward_dependency(self, out_grad, in_data, out_data):
            if isinstance(op, NDArrayOp):
                return op.declare_backward_dependency(out_grad, in_data, out_data)
            return super().declare_backward_dependency(out_grad, in_data, out_data)

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return _LegacyRun(op)

    LegacyProp.__name__ = LegacyProp.__qualname__ = type(op).__name__ + "Prop"
    return LegacyProp


class _LegacyRun(CustomOp):
    """Calls a legacy operator's callbacks from the CustomOp ones."""

    def __init__(self, op: PythonOp):
        self.op = op

    def _host(self, arrays):
        return [a.asnumpy() for a in arrays]

    def _store(self, dst: list, src: list, req: list) -> None:
        for d, s, r in zip(dst, src, req):
            self.assign(d, r, s)

    def forward(self, is_train, req, in_data, out_data, aux):
        if not self.op._numpy:
            self.op.forward(in_data, out_data)
            return
        outs = [np.zeros(o.shape, dtype=o.dtype) for o in out_data]
        self.op.forward(self._host(in_data), outs)
        self._store(out_data, outs, req)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        if not self.op._numpy:
            self.op.backward(out_grad, in_data, out_data, in_grad)
            return
        grads = [np.zeros(g.shape, dtype=g.dtype) for g in in_grad]
        self.op.backward(self._host(out_grad), self._host(in_data), self._host(out_data),
                         grads)
        self._store(in_grad, grads, req)

