"""`mx.contrib.onnx.import_model` and `get_model_metadata`: an ONNX model read back as a
symbol with its parameters, ready for Module (inference or fine-tuning).

The ONNX nodes are visited in order (the format requires topological order). A node whose
inputs are all constants (initializers, Constant nodes, or values folded before) is evaluated
at import time by import_fold.py when it knows the op: that turns the shape arithmetic of
exported models (Shape, Gather, Concat, Reshape ...) into plain constants. Every other node is
translated by import_ops.py into minimod operators. A constant that reaches a translated node
becomes a parameter (a variable, with its value in arg_params or aux_params); the graph
inputs that are not initializers become the symbol's data variables.

The shapes of graph inputs come from the model's declared input shapes; folding `Shape` needs
them fixed. A reshape whose target was computed from an input's own shape keeps its first
(batch) dimension free, so the imported symbol binds at any batch size.
"""
from __future__ import annotations

import numpy as np

from .. import ndarray as nd
from .. import symbol as sym
from . import import_index, import_nn, import_rnn  # noqa: F401  (they register translators)
from .builder import ONNXImportError, require_onnx
from .import_fold import FOLDERS, shape_of
from .import_ops import IMPORTERS

__all__ = ["import_model", "get_model_metadata", "ONNXImportError"]


class Context:
    """What the translators read and write while one model is imported."""

    def __init__(self, graph, numpy_helper, opset: int):
        self.opset = opset
        self.numpy_helper = numpy_helper
        self.consts: dict = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        self.derived: set = set()  # constants computed from a tensor's shape
        self.syms: dict = {}
        self.params: dict = {}
        self.input_shapes: dict = {}
        for value in graph.input:
            if value.name in self.consts:
                continue
            dims = value.type.tensor_type.shape.dim
            shape = tuple(d.dim_value if d.HasField("dim_value") else None for d in dims)
            self.input_shapes[value.name] = shape
            self.syms[value.name] = sym.var(value.name)
        self._shape_cache: dict = {}

    def const(self, name: str):
        """The constant value of `name`, or None when it is computed by the graph."""
        if name == "":
            return None
        return self.consts.get(name)

    def symbol(self, name: str):
        """`name` as a symbol; a constant becomes a parameter variable of that name."""
        if name in self.syms:
            return self.syms[name]
        if name not in self.consts:
            raise ONNXImportError("value %r is used before any node computes it" % name)
        value = self.consts[name]
        if value.dtype == np.bool_:  # minimod's logic ops take 0/1 in a float dtype
            value = value.astype(np.float32)
        if value.ndim == 0:  # MXNet arrays have at least one axis; (1,) broadcasts alike
            value = value.reshape(1)
        self.params[name] = value
        # the declared shape lets bind infer a constant that only an elementwise op reads
        self.syms[name] = sym.var(name, shape=value.shape, dtype=value.dtype)
        return self.syms[name]

    def new_param(self, hint: str, value: np.ndarray) -> str:
        """A fresh constant (a weight the import had to transpose or rescale); its name."""
        name, k = hint, 1
        while name in self.consts or name in self.syms:
            name, k = "%s_%d" % (hint, k), k + 1
        self.consts[name] = value
        return name

    def shape(self, name: str) -> tuple:
        """The static shape of `name` (constants, or inferred from the input shapes)."""
        if name in self.consts:
            return tuple(self.consts[name].shape)
        if name not in self._shape_cache:
            known = {k: v for k, v in self.input_shapes.items()}
            known.update({k: v.shape for k, v in self.params.items()})
            if any(d is None for s in known.values() for d in s):
                raise ONNXImportError("the shape of %r is needed, but the model's inputs %s "
                                      "have dynamic dimensions" % (name, self.input_shapes))
            value = self.syms[name]
            args = set(value.list_inputs())
            _, out_shapes, _ = value.infer_shape(**{k: v for k, v in known.items()
                                                    if k in args})
            self._shape_cache[name] = tuple(out_shapes[0])
        return self._shape_cache[name]


def _attrs(node, helper) -> dict:
    out = {}
    for attr in node.attribute:
        value = helper.get_attribute_value(attr)
        if isinstance(value, bytes):
            value = value.decode()
        elif isinstance(value, list) and value and isinstance(value[0], bytes):
            value = [v.decode() for v in value]
        out[attr.name] = value
    return out


def _visit(ctx: Context, node, helper) -> None:
    attrs = _attrs(node, helper)
    if node.domain not in ("", "ai.onnx"):
        raise ONNXImportError("node %r: operator %s of domain %r is not imported"
                              % (node.name or node.output[0], node.op_type, node.domain))
    if node.op_type == "Shape":  # a constant wherever the input's shape is fixed
        try:
            ctx.consts[node.output[0]] = shape_of(ctx, node)[0]
            ctx.derived.add(node.output[0])
            return
        except ONNXImportError:
            pass  # dynamic: computed at run time by the translator
    fold = FOLDERS.get(node.op_type)
    inputs = [ctx.const(n) for n in node.input]
    if fold is not None and all(v is not None or n == "" for v, n in zip(inputs, node.input)):
        values = fold(ctx, node, inputs, attrs)
        if values is not None:
            derived = node.op_type == "Shape" or any(n in ctx.derived for n in node.input)
            for name, value in zip(node.output, values):
                ctx.consts[name] = np.asarray(value)
                if derived:
                    ctx.derived.add(name)
            return
    translate = IMPORTERS.get(node.op_type)
    if translate is None:
        raise ONNXImportError("node %r: ONNX operator %s is not imported"
                              % (node.name or node.output[0], node.op_type))
    outs = translate(ctx, node, attrs)
    for name, value in zip(node.output, outs):
        if name:
            ctx.syms[name] = value


def _load(model_file):
    onnx = require_onnx()
    if isinstance(model_file, (str, bytes)) or hasattr(model_file, "__fspath__"):
        return onnx, onnx.load(model_file)
    return onnx, model_file


def import_model(model_file) -> tuple:
    """(sym, arg_params, aux_params) of the ONNX model at `model_file` (a path or a loaded
    ModelProto). The parameters are NDArrays on the CPU, named as the model's initializers."""
    onnx, model = _load(model_file)
    from onnx import helper, numpy_helper
    opset = max([o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] or [1])
    ctx = Context(model.graph, numpy_helper, opset)
    for node in model.graph.node:
        _visit(ctx, node, helper)
    heads = []
    for out in model.graph.output:
        if out.name not in ctx.syms and out.name not in ctx.consts:
            raise ONNXImportError("graph output %r is not computed by any node" % out.name)
        heads.append(ctx.symbol(out.name))
    result = heads[0] if len(heads) == 1 else sym.Group(heads)
    args, aux = set(result.list_arguments()), set(result.list_auxiliary_states())
    arg_params = {k: nd.array(v, dtype=v.dtype) for k, v in ctx.params.items() if k in args}
    aux_params = {k: nd.array(v, dtype=v.dtype) for k, v in ctx.params.items() if k in aux}
    return result, arg_params, aux_params


def get_model_metadata(model_file) -> dict:
    """{'input_tensor_data': [(name, shape)], 'output_tensor_data': [(name, shape)]} of the
    model's graph inputs (initializers left out) and outputs; a dynamic dim is its name."""
    _, model = _load(model_file)
    stored = {t.name for t in model.graph.initializer}

    def described(values):
        out = []
        for value in values:
            dims = value.type.tensor_type.shape.dim
            shape = tuple(d.dim_value if d.HasField("dim_value") else d.dim_param
                          for d in dims)
            out.append((value.name, shape))
        return out
    return {"input_tensor_data": described(v for v in model.graph.input
                                           if v.name not in stored),
            "output_tensor_data": described(model.graph.output)}
