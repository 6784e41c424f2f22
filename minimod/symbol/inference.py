"""Shape and dtype inference as `Symbol.infer_shape` / `infer_type` answer it.

The passes work with None for what is unknown (`minimod.passes.infer`); MXNet's API speaks 0
for an unknown dim and () for an unknown shape (-1 and None under `mx.np_shape`), and takes the
known shapes and dtypes positionally (in argument order) or by input name. This module
translates both ways.
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError, ShapeError
from ..shape_semantics import api_shape_in

__all__ = ["inferred_shapes", "inferred_types"]


def _known_shapes(symbol, args, kwargs) -> dict:
    arg_names = symbol.list_arguments()
    input_names = symbol.list_inputs()
    known = {}
    if args:
        if len(args) > len(arg_names):
            raise ShapeError("infer_shape got %d positional shapes for %d arguments"
                             % (len(args), len(arg_names)))
        for name, shape in zip(arg_names, args):
            if shape is not None:
                known[name] = api_shape_in(shape)
    for name, shape in kwargs.items():
        if name not in input_names:
            raise ShapeError("infer_shape: '%s' is not an input of the symbol (inputs: %s)"
                             % (name, ", ".join(input_names)))
        known[name] = api_shape_in(shape)
    return known


def _per_kind(graph, table: list) -> tuple:
    """(arguments', outputs', aux states') values of a per-entry `table`."""
    return ([table[graph.row_ptr[i]] for i in graph.argument_ids()],
            [table[eid] for eid in graph.output_eids],
            [table[graph.row_ptr[i]] for i in graph.aux_ids()])


def inferred_shapes(symbol, args, kwargs) -> tuple:
    """(argument, output, aux-state) shapes, None where unknown, from the shapes given."""
    from ..passes.infer import infer_graph_shapes  # the compiler loads on first use
    graph = symbol._graph
    return _per_kind(graph, infer_graph_shapes(graph, _known_shapes(symbol, args, kwargs)))


def inferred_types(symbol, args, kwargs) -> tuple:
    """(argument, output, aux-state) dtypes, None where unknown, from the dtypes given."""
    from ..passes.infer import infer_graph_types  # the compiler loads on first use
    known = {}
    for name, dtype in zip(symbol.list_arguments(), args):
        if dtype is not None:
            known[name] = np.dtype(dtype)
    inputs = symbol.list_inputs()
    for name, dtype in kwargs.items():
        if name not in inputs:
            raise MXNetError("infer_type: '%s' is not an input of the symbol (inputs: %s)"
                             % (name, ", ".join(inputs)))
        if dtype is not None:
            known[name] = np.dtype(dtype)
    graph = symbol._graph
    return _per_kind(graph, infer_graph_types(graph, known))
