"""The ONNX graph under construction, and what one converter sees of its MXNet node.

A converter (convert_nn.py, convert_elementwise.py, convert_shape.py, convert_rnn.py) turns
one MXNet node into ONNX nodes. It is given a `Site`: the node, its parsed attributes, the
ONNX value names of its inputs, their inferred shapes and dtypes, and the names its outputs
must carry. It adds nodes through the `Builder`, which hands out unique names for
intermediate values and keeps the constants as initializers.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..base import MissingDependencyError, MXNetError

__all__ = ["ONNXExportError", "ONNXImportError", "Builder", "Site", "CONVERTERS", "converts",
           "require_onnx"]


def require_onnx():
    """The `onnx` package, or an error that says how to install it."""
    try:
        import onnx
    except ImportError:
        raise MissingDependencyError(
            "mx.onnx needs the 'onnx' package (pip install 'minimod[onnx]' or "
            "pip install onnx)") from None
    return onnx


class ONNXExportError(MXNetError, ValueError):
    """The graph (or an argument of export_model) cannot be written as ONNX; the message names
    the node or argument at fault."""


class ONNXImportError(MXNetError, ValueError):
    """The ONNX model holds something minimod cannot import; the message names the node."""


class Site:
    """One MXNet node as its converter sees it."""

    def __init__(self, builder: "Builder", node, ins: Sequence[str], in_shapes, in_dtypes,
                 out_names: Sequence[str], out_shapes, out_dtypes):
        self.b = builder
        self.node = node
        self.name = node.name
        self.attrs = node.op.attrs
        self.ins = list(ins)
        self.in_shapes = list(in_shapes)
        self.in_dtypes = list(in_dtypes)
        self.outs = list(out_names)
        self.out_shapes = list(out_shapes)
        self.out_dtypes = list(out_dtypes)

    def refuse(self, why: str) -> ONNXExportError:
        return ONNXExportError("cannot export node %r (%s) to ONNX: %s"
                               % (self.name, self.node.op.name, why))

    def fixed_shape(self, index: int = 0, what: str = "input") -> tuple:
        """The inferred shape of input `index` (or output, with what='output'), which the
        conversion bakes into the ONNX graph: refused when the export has dynamic shapes."""
        if self.b.dynamic:
            raise self.refuse("its conversion needs the fixed shape of its %s %d, and the "
                              "export was asked for dynamic shapes (dynamic=True)"
                              % (what, index))
        return tuple(self.in_shapes[index] if what == "input" else self.out_shapes[index])

    def rank(self, index: int = 0) -> int:
        return len(self.in_shapes[index])

    def param(self, index: int) -> Optional[np.ndarray]:
        """Input `index`'s value when it is a parameter stored in the ONNX file, else None."""
        return self.b.initializer_value(self.ins[index])


class Builder:
    """Nodes, initializers and value names of the ONNX graph being written."""

    def __init__(self, helper, numpy_helper, opset: int, dynamic: bool):
        self.helper = helper
        self.numpy_helper = numpy_helper
        self.opset = opset
        self.dynamic = dynamic
        self.nodes: list = []
        self.initializers: list = []
        self._values: dict = {}
        self._taken: set = set()

    def reserve(self, name: str) -> str:
        """`name` if it is still free, else the first free `name_N`; marks it taken."""
        candidate, k = name, 1
        while candidate in self._taken:
            candidate = "%s_%d" % (name, k)
            k += 1
        self._taken.add(candidate)
        return candidate

    def add(self, op_type: str, inputs: Sequence[str], out: Optional[str] = None,
            hint: str = "", num_outputs: int = 1, **attrs):
        """Append one ONNX node. Returns its output name (or names when num_outputs > 1);
        `out` names the first output, else a fresh name is made from `hint`."""
        if num_outputs == 1:
            outputs = [out if out is not None else self.reserve(hint or op_type.lower())]
        else:
            outputs = [self.reserve("%s_%d" % (hint or op_type.lower(), i))
                       for i in range(num_outputs)]
        node_name = self.reserve("%s/%s" % (outputs[0], op_type))
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self.helper.make_node(op_type, list(inputs), outputs, name=node_name,
                                                **attrs))
        return outputs[0] if num_outputs == 1 else outputs

    def initializer(self, name: str, value: np.ndarray) -> str:
        """Store `value` under `name` (which must be free) as an initializer."""
        self.initializers.append(self.numpy_helper.from_array(np.asarray(value), name))
        self._values[name] = value
        return name

    def const(self, value, hint: str, dtype=None) -> str:
        """A constant tensor stored as an initializer under a fresh name."""
        array = np.array(value, dtype=dtype)
        return self.initializer(self.reserve(hint), array)

    def ints(self, values: Sequence[int], hint: str) -> str:
        """A 1-D int64 constant (axes, shapes, pads and the like)."""
        return self.const(np.array(list(values), dtype=np.int64).reshape(-1), hint)

    def initializer_value(self, name: str) -> Optional[np.ndarray]:
        return self._values.get(name)

    # -- small compositions used by several converters

    def reduce(self, op_type: str, x: str, axes: Optional[Sequence[int]], keepdims: bool,
               out: Optional[str] = None, hint: str = "") -> str:
        """A Reduce* node; axes None reduces every axis. ReduceSum takes its axes as an input
        from opset 13 on, the others as an attribute until opset 18."""
        keep = int(bool(keepdims))
        if axes is None:
            return self.add(op_type, [x], out=out, hint=hint, keepdims=keep)
        if op_type == "ReduceSum":
            return self.add(op_type, [x, self.ints(axes, hint + "_axes")], out=out, hint=hint,
                            keepdims=keep)
        return self.add(op_type, [x], out=out, hint=hint, axes=list(axes), keepdims=keep)

    def reshape(self, x: str, shape: Sequence[int], out: Optional[str] = None,
                hint: str = "") -> str:
        return self.add("Reshape", [x, self.ints(shape, hint + "_shape")], out=out, hint=hint)

    def unsqueeze(self, x: str, axes: Sequence[int], out: Optional[str] = None,
                  hint: str = "") -> str:
        return self.add("Unsqueeze", [x, self.ints(axes, hint + "_axes")], out=out, hint=hint)

    def squeeze(self, x: str, axes: Optional[Sequence[int]], out: Optional[str] = None,
                hint: str = "") -> str:
        inputs = [x] if axes is None else [x, self.ints(axes, hint + "_axes")]
        return self.add("Squeeze", inputs, out=out, hint=hint)

    def along(self, vector: str, axis: int, rank: int, hint: str) -> str:
        """A 1-D tensor reshaped to broadcast along `axis` of a rank-`rank` tensor."""
        if axis == rank - 1:
            return vector
        return self.reshape(vector, [-1] + [1] * (rank - 1 - axis), hint=hint)


CONVERTERS: dict = {}


def converts(*op_names: str):
    """Register a converter for the MXNet operators `op_names` (canonical registry names)."""
    def wrap(fn):
        for name in op_names:
            CONVERTERS[name] = fn
        return fn
    return wrap
