"""`export_model`: a symbol and its parameters written as an ONNX model for inference.

The graph is walked in topological order and each node handed to the converter registered for
its operator (convert_nn.py, convert_elementwise.py, convert_shape.py, convert_rnn.py).
Shapes and dtypes come from minimod's own inference over the given input shapes, so
converters can pick exact ONNX forms; the
parameters become initializers under their own names, and the graph inputs are the symbol's
remaining inputs, minus the labels of output heads (SoftmaxOutput, the regression outputs,
SVMOutput), which inference never reads. The result is the graph `forward(is_train=False)`
computes: Dropout is the identity, BatchNorm uses its moving statistics, and `foreach` loops
are unrolled over the lengths of the given shapes, as binding does.

The model targets ONNX opset 13 with IR version 7, which every ONNX Runtime since 1.7 reads.
"""
from __future__ import annotations

import logging
import warnings
from typing import Optional

import numpy as np

from .. import __minimod_version__
from .. import ndarray as nd
from ..base import atomic_write
from ..checkpoint import split_params
from ..passes.control_flow import has_loops, unroll_loops
from ..passes.infer import infer_graph_shapes, infer_graph_types
from ..symbol import Symbol
from ..symbol import load as load_symbol
from . import (  # noqa: F401
    convert_elementwise,
    convert_index,
    convert_nn,
    convert_norm,
    convert_rnn,
    convert_shape,
)
from .builder import CONVERTERS, Builder, ONNXExportError, Site, require_onnx

__all__ = ["export_model", "get_operator_support", "OPSET_VERSION"]

OPSET_VERSION = 13
IR_VERSION = 7

# output heads whose label input the inference graph never reads: op -> label slot
_LABEL_SLOTS = {"SoftmaxOutput": 1, "LinearRegressionOutput": 1, "LogisticRegressionOutput": 1,
                "MAERegressionOutput": 1, "SVMOutput": 1}


def get_operator_support(opset_version: Optional[int] = None) -> list:
    """The MXNet operator names export_model converts (the registry's canonical names)."""
    if opset_version is not None and opset_version < OPSET_VERSION:
        return []
    return sorted(CONVERTERS)


def _as_numpy(name: str, value) -> np.ndarray:
    if isinstance(value, nd.NDArray):
        return value.asnumpy()
    if isinstance(value, np.ndarray):
        return value
    raise ONNXExportError("parameter %r is a %s, not an NDArray or a numpy array"
                          % (name, type(value).__name__))


def _load_inputs(sym, params) -> tuple:
    """(Symbol, {name: numpy array}) from objects or from a JSON file and a .params file."""
    if isinstance(sym, str):
        sym = load_symbol(sym)
    if not isinstance(sym, Symbol):
        raise ONNXExportError("sym must be a Symbol or the path of a symbol JSON file, not %s"
                              % type(sym).__name__)
    if isinstance(params, str):
        loaded = nd.load(params)
        if not isinstance(loaded, dict):
            raise ONNXExportError("%r holds an unnamed list of arrays, not named parameters"
                                  % params)
        arg, aux = split_params(loaded, params)
        merged = {**arg, **aux} if (arg or aux) else dict(loaded)
    elif isinstance(params, dict):
        merged = dict(params)
    elif isinstance(params, (list, tuple)) and len(params) == 2 \
            and all(isinstance(p, dict) for p in params):
        merged = {**params[0], **params[1]}
    else:
        raise ONNXExportError("params must be a dict of arrays, a list [arg_params, "
                              "aux_params] or the path of a .params file")
    return sym, {k: _as_numpy(k, v) for k, v in merged.items()}


def _label_inputs(graph) -> set:
    """Variables read only through the label slot of an output head."""
    other, label = set(), set()
    for node in graph.nodes:
        slot = _LABEL_SLOTS.get(node.op_name)
        for pos, entry in enumerate(node.inputs):
            if entry.node.op is None:
                (label if pos == slot else other).add(entry.node.name)
    return label - other


def _input_specs(sym, params, labels, in_shapes, in_types, dynamic_input_shapes) -> tuple:
    """The graph inputs with their shapes, dtypes and ONNX dims, checked against the call."""
    inputs = [n for n in sym.list_inputs() if n not in params and n not in labels]
    with_labels = [n for n in sym.list_inputs() if n not in params]
    if in_shapes is None:
        if inputs:
            raise ONNXExportError("in_shapes is required: give one shape per graph input %s"
                                  % inputs)
        in_shapes = []
    in_shapes = [tuple(s) for s in in_shapes]
    if len(in_shapes) == len(inputs):
        names = inputs
    elif len(in_shapes) == len(with_labels):
        names = with_labels
    else:
        raise ONNXExportError("in_shapes has %d shapes, but the graph inputs are %s (labels "
                              "%s are not inputs of the exported graph and may be left out)"
                              % (len(in_shapes), inputs, sorted(labels)))
    if not isinstance(in_types, (list, tuple)):
        in_types = [in_types] * len(in_shapes)
    if len(in_types) != len(in_shapes):
        raise ONNXExportError("in_types has %d dtypes for %d shapes in in_shapes"
                              % (len(in_types), len(in_shapes)))
    shapes = dict(zip(names, in_shapes))
    types = {n: np.dtype(t) for n, t in zip(names, in_types)}
    if dynamic_input_shapes is None:
        dims = {n: [None] * len(shapes[n]) for n in inputs}
    else:
        if len(dynamic_input_shapes) != len(inputs):
            raise ONNXExportError("dynamic_input_shapes has %d shapes for the graph inputs %s"
                                  % (len(dynamic_input_shapes), inputs))
        dims = {}
        for n, dyn in zip(inputs, dynamic_input_shapes):
            if len(dyn) != len(shapes[n]):
                raise ONNXExportError("input %r: dynamic shape %s and in_shape %s differ in "
                                      "rank" % (n, tuple(dyn), shapes[n]))
            dims[n] = list(dyn)
    return inputs, shapes, types, dims


def _value_names(builder: Builder, graph, params) -> list:
    """The ONNX value name of every entry: a variable's own name; an op's output the node's
    name (one visible output) or MXNet's output names (several)."""
    names: list = [None] * graph.num_entries
    for nid in graph.variable_ids():
        names[graph.row_ptr[nid]] = builder.reserve(graph.nodes[nid].name)
    for nid, node in enumerate(graph.nodes):
        if node.op is None:
            continue
        visible = node.num_visible_outputs()
        wanted = [node.name] if visible == 1 else node.output_names()[:visible]
        for i, name in enumerate(wanted):
            names[graph.row_ptr[nid] + i] = builder.reserve(name)
    return names


def _check_known(graph, shapes, dtypes, nid) -> None:
    node = graph.nodes[nid]
    for eid in list(graph.input_eids[nid]) + list(range(graph.row_ptr[nid],
                                                        graph.row_ptr[nid + 1])):
        shape, dtype = shapes[eid], dtypes[eid]
        if shape is None or any(d is None for d in shape) or dtype is None:
            raise ONNXExportError("the shape or dtype of %r, used by node %r, could not be "
                                  "inferred from in_shapes and in_types"
                                  % (graph.entry_name(eid), node.name))


def _convert_nodes(builder: Builder, graph, names, shapes, dtypes, verbose) -> None:
    for nid, node in enumerate(graph.nodes):
        if node.op is None:
            continue
        convert = CONVERTERS.get(node.op.name)
        if convert is None:
            raise ONNXExportError("no ONNX conversion for operator %r (node %r); "
                                  "mx.onnx.get_operator_support() lists the ones there are"
                                  % (node.op.name, node.name))
        _check_known(graph, shapes, dtypes, nid)
        for eid in graph.input_eids[nid]:
            if names[eid] is None:
                raise ONNXExportError("node %r reads %r, a hidden output that inference does "
                                      "not compute" % (node.name, graph.entry_name(eid)))
        ins = graph.input_eids[nid]
        outs = range(graph.row_ptr[nid], graph.row_ptr[nid] + node.num_visible_outputs())
        site = Site(builder, node, [names[e] for e in ins], [shapes[e] for e in ins],
                    [dtypes[e] for e in ins], [names[e] for e in outs],
                    [shapes[e] for e in outs], [dtypes[e] for e in outs])
        if verbose:
            logging.info("onnx export: node %r (%s)", node.name, node.op.name)
        convert(site)


def _graph_inputs(builder: Builder, graph, params: dict, inputs: list, types: dict,
                  dims: dict) -> list:
    """Store the parameters as initializers; the value infos of the graph inputs."""
    helper = builder.helper
    graph_inputs = []
    for nid in graph.variable_ids():
        name = graph.nodes[nid].name
        if name in params:
            builder.initializer(name, params[name])
        elif name in inputs:
            elem = helper.np_dtype_to_tensor_dtype(types[name])
            graph_inputs.append(helper.make_tensor_value_info(name, elem, dims[name]))
    return graph_inputs


def _graph_outputs(builder: Builder, graph, names, shapes, dtypes, taken: set) -> list:
    """Value infos of the graph outputs; an output that is a graph input, a parameter or an
    earlier output goes through an Identity of its own."""
    helper = builder.helper
    graph_outputs, seen = [], set()
    for eid in graph.output_eids:
        name = names[eid]
        if name is None:
            raise ONNXExportError("the graph output %r is a hidden output that inference "
                                  "does not compute" % graph.entry_name(eid))
        if name in seen or name in taken:
            name = builder.add("Identity", [name], out=builder.reserve(name + "_output"))
        seen.add(name)
        shape = [None] * len(shapes[eid]) if builder.dynamic else list(shapes[eid])
        graph_outputs.append(helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(dtypes[eid]), shape))
    return graph_outputs


def build_model(sym, params: dict, in_shapes, in_types=np.float32, verbose: bool = False,
                dynamic: bool = False, dynamic_input_shapes=None):
    """The onnx ModelProto of `sym` with `params` (a dict of numpy arrays)."""
    onnx = require_onnx()
    from onnx import helper, numpy_helper

    graph = sym._graph
    inputs, in_shape_of, in_type_of, dims = _input_specs(
        sym, params, _label_inputs(graph), in_shapes, in_types,
        dynamic_input_shapes if dynamic else None)
    if not dynamic:
        dims = {n: list(in_shape_of[n]) for n in inputs}
    known = {**{k: v.shape for k, v in params.items()}, **in_shape_of}
    if has_loops(graph):  # foreach loops, unrolled over the given lengths as bind does
        if dynamic:
            raise ONNXExportError("a graph with foreach loops is exported unrolled, for the "
                                  "fixed lengths of in_shapes: dynamic=True is refused")
        graph = unroll_loops(graph, known)
    shapes = infer_graph_shapes(graph, known)
    dtypes = infer_graph_types(graph, {**{k: v.dtype for k, v in params.items()},
                                       **in_type_of})

    builder = Builder(helper, numpy_helper, OPSET_VERSION, dynamic)
    names = _value_names(builder, graph, params)
    graph_inputs = _graph_inputs(builder, graph, params, inputs, in_type_of, dims)
    _convert_nodes(builder, graph, names, shapes, dtypes, verbose)
    graph_outputs = _graph_outputs(builder, graph, names, shapes, dtypes,
                                   set(params) | set(inputs))
    read = {name for node in builder.nodes for name in node.input}
    read.update(out.name for out in graph_outputs)
    initializers = [t for t in builder.initializers if t.name in read]
    onnx_graph = helper.make_graph(builder.nodes, "minimod", graph_inputs, graph_outputs,
                                   initializer=initializers)
    model = helper.make_model(onnx_graph, producer_name="minimod",
                              producer_version=__minimod_version__,
                              opset_imports=[helper.make_opsetid("", OPSET_VERSION)])
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def export_model(sym, params, in_shapes=None, in_types=np.float32,
                 onnx_file_path: str = "model.onnx", verbose: bool = False,
                 dynamic: bool = False, dynamic_input_shapes=None,
                 run_shape_inference: bool = False, input_type=None, input_shape=None) -> str:
    """Write `sym` with `params` as an ONNX model at `onnx_file_path`; returns the path.

    `sym` is a Symbol or a symbol JSON file; `params` a dict of arrays (arguments and aux
    states), a list [arg_params, aux_params] or a `.params` file. `in_shapes` (and `in_types`,
    one dtype or one per shape) describe the graph inputs in `list_inputs()` order, the labels
    of output heads optional. `dynamic=True` leaves the input dims open (all of them, or the
    ones `dynamic_input_shapes` gives as None); nodes whose conversion needs fixed shapes then
    refuse. `input_type`/`input_shape` are the older names of `in_types`/`in_shapes`.
    """
    onnx = require_onnx()
    if input_type is not None:
        in_types = input_type
    if input_shape is not None:
        in_shapes = input_shape
    symbol, arrays = _load_inputs(sym, params)
    model = build_model(symbol, arrays, in_shapes, in_types, verbose, dynamic,
                        dynamic_input_shapes)
    if run_shape_inference:
        try:
            model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        except Exception as err:  # ONNX's own inference may not know every case
            warnings.warn("ONNX shape inference failed, the model is written without its "
                          "inferred shapes: %s" % err)
    atomic_write(onnx_file_path, model.SerializeToString())
    if verbose:
        logging.info("onnx export: wrote %s", onnx_file_path)
    return onnx_file_path
