"""The graph compiler: pure passes from a symbol graph to an execution `Plan`.

`compile_graph` runs common-subexpression elimination, shape inference, type inference, the
device pass (for a given Context), the fusion pass, the layout pass, the gradient pass and the
memory planner in that order and returns a frozen Plan. It allocates nothing: the executor
binds a plan to a device. (DESIGN lists Plan under executor/; it is defined here so that the
passes, which build it, do not import the executor, which runs it.)
"""
from __future__ import annotations

import dataclasses
import warnings
from typing import Mapping, Optional

import numpy as np

from ..base import BindError, ShapeError
from ..ops.registry import fmt_shape, shape_is_known
from ..symbol.graph import Graph
from .cse import eliminate_common_expr
from .device import specialize
from .fuse import fuse, fusion
from .gradient import BackwardOp, GradientGraph, build_gradient
from .infer import infer_graph_shapes, infer_graph_types
from .layout import batch_last, layouts
from .liveness import last_use
from .memory import MemoryPlan, entry_nbytes, plan_memory

__all__ = ["Plan", "compile_graph", "infer_graph_shapes", "infer_graph_types", "build_gradient",
           "last_use", "plan_memory", "MemoryPlan", "BackwardOp", "GradientGraph",
           "normalize_grad_req", "specialize", "fuse", "fusion", "batch_last", "layouts",
           "eliminate_common_expr"]

GRAD_REQS = ("write", "add", "null")


@dataclasses.dataclass(frozen=True)
class Plan:
    """Everything the executor needs, decided before any array exists.

    Steps are the op nodes of `graph` in order; those with id < `num_forward_nodes` form the
    forward pass, the rest the backward pass. `symbol_graph` is the forward graph after the
    rewrites that keep MXNet's ops (common-subexpression elimination), before the device,
    fusion and layout passes: what `Executor.get_optimized_symbol` returns.
    """

    graph: Graph
    symbol_graph: Graph
    common_expr_eliminated: bool
    num_forward_nodes: int
    arg_names: tuple
    aux_names: tuple
    arg_eids: tuple
    aux_eids: tuple
    output_eids: tuple
    output_names: tuple
    shapes: tuple
    dtypes: tuple
    grad_req: Mapping[str, str]
    grad_eids: Mapping[str, int]
    direct_grads: frozenset
    head_grad_eids: tuple
    external: frozenset
    memory: MemoryPlan

    @property
    def unplanned_bytes(self) -> int:
        return sum(entry_nbytes(self.shapes[e], self.dtypes[e]) for e in range(len(self.shapes))
                   if e not in self.external)

    def arg_shapes(self) -> dict:
        return {n: self.shapes[e] for n, e in zip(self.arg_names, self.arg_eids)}


def normalize_grad_req(grad_req, arg_names) -> dict:
    """grad_req as str, list (in argument order) or dict, as a dict over every argument."""
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in arg_names}
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(arg_names):
            raise BindError("grad_req list has %d entries for %d arguments"
                            % (len(grad_req), len(arg_names)))
        reqs = dict(zip(arg_names, grad_req))
    elif isinstance(grad_req, dict):
        # MXNet ignores names that are not arguments (a dict written for another form of the
        # net, the fused RNN's 'parameters'); one asking for a gradient is likely a mistake
        unknown = [k for k, v in grad_req.items() if k not in arg_names and v != "null"]
        if unknown:
            warnings.warn("grad_req names %s, which are not arguments of the symbol; ignored "
                          "(arguments: %s)" % (unknown, ", ".join(arg_names)), stacklevel=3)
        reqs = {n: grad_req.get(n, "null") for n in arg_names}
    else:
        raise BindError("grad_req must be a str, list or dict, not %r" % (grad_req,))
    bad = {k: v for k, v in reqs.items() if v not in GRAD_REQS}
    if bad:
        raise BindError("grad_req must be one of %s; got %s" % (GRAD_REQS, bad))
    return reqs


def compile_graph(graph: Graph, shapes: Mapping[str, tuple], dtypes: Mapping[str, np.dtype],
                  grad_req: Mapping[str, str], enable_inplace: bool = True,
                  reuse_memory: bool = True,
                  default_dtype: Optional[np.dtype] = np.dtype(np.float32),
                  ctx=None, common_expr: bool = True) -> Plan:
    """Infer, differentiate and plan `graph` for the given input shapes and dtypes.

    With `ctx` (the Context the plan will run on) ops pick their variant for that device
    (`passes.device.specialize`) before the gradient pass; `plan.graph` then holds those ops.
    With `common_expr`, repeated computations are merged first (`passes.cse`); the outputs
    keep the names the symbol gives them either way.
    """
    output_names = tuple(_output_names(graph))
    if common_expr:
        graph = eliminate_common_expr(graph)
    symbol_graph = graph
    arg_ids = graph.argument_ids()
    aux_ids = graph.aux_ids()
    arg_names = tuple(graph.nodes[i].name for i in arg_ids)
    aux_names = tuple(graph.nodes[i].name for i in aux_ids)
    fwd_shapes = infer_graph_shapes(graph, shapes)
    missing = [graph.nodes[i].name for i in graph.variable_ids()
               if not shape_is_known(fwd_shapes[graph.row_ptr[i]])]
    if missing or not all(shape_is_known(s) for s in fwd_shapes):
        detail = ", ".join("%s: %s" % (n, fmt_shape(fwd_shapes[graph.row_ptr[i]]))
                           for i, n in ((i, graph.nodes[i].name) for i in graph.variable_ids())
                           if n in missing)
        if not missing:
            dynamic = [n for n in graph.nodes if n.op is not None and n.op.dynamic_shape]
            if dynamic:
                raise ShapeError(
                    "%s (%s): its output shape depends on the input values, and a bound graph "
                    "needs shapes it can plan; call mx.nd.%s imperatively instead"
                    % (dynamic[0].name, dynamic[0].op.name,
                       dynamic[0].op.name.replace("_contrib_", "contrib.")))
            bad = [graph.entry_name(e) for e, s in enumerate(fwd_shapes) if not shape_is_known(s)]
            detail = "outputs %s" % ", ".join(bad[:5])
        raise ShapeError("cannot decide every shape; give the shapes of: %s" % detail)
    known_types = dict(dtypes)
    fwd_types = infer_graph_types(graph, known_types)
    if default_dtype is not None and any(t is None for t in fwd_types):
        for i in graph.variable_ids():
            name = graph.nodes[i].name
            if fwd_types[graph.row_ptr[i]] is None and name not in known_types:
                known_types[name] = default_dtype
        fwd_types = infer_graph_types(graph, known_types)
    device_graph = specialize(graph, fwd_types, ctx)
    if device_graph is not graph:  # a variant may size its hidden outputs differently
        graph = device_graph
        fwd_shapes = infer_graph_shapes(graph, shapes)
    fused_graph = fuse(graph, fwd_shapes, fwd_types, ctx)
    if fused_graph is not graph:  # entries were dropped: every entry id moved
        graph = fused_graph
        arg_ids, aux_ids = graph.argument_ids(), graph.aux_ids()  # same variables, same order
        fwd_shapes = infer_graph_shapes(graph, shapes)
        fwd_types = infer_graph_types(graph, known_types)
    laid_out = batch_last(graph, fwd_shapes, ctx)
    if laid_out is not graph:  # same entries, some of them batch-last now
        graph = laid_out
        fwd_shapes = infer_graph_shapes(graph, shapes)
    wrt = [n for n in arg_names if grad_req.get(n, "null") != "null"]
    if wrt:
        gg = build_gradient(graph, wrt)
        full = gg.graph
        all_shapes = list(fwd_shapes) + [None] * (full.num_entries - graph.num_entries)
        all_types = list(fwd_types) + [None] * (full.num_entries - graph.num_entries)
        for eid, src in gg.shape_source.items():
            all_shapes[eid] = fwd_shapes[src]
            all_types[eid] = fwd_types[src]
        grad_eids = dict(zip(wrt, gg.grad_eids))
        head_grad_eids = tuple(None if nid is None else full.row_ptr[nid]
                               for nid in gg.head_grad_nodes)
        num_forward_nodes = gg.num_forward_nodes
    else:
        full, all_shapes, all_types = graph, list(fwd_shapes), list(fwd_types)
        grad_eids, head_grad_eids = {}, tuple(None for _ in graph.outputs)
        num_forward_nodes = len(graph.nodes)
    variables = {full.row_ptr[i] for i in full.variable_ids()}
    consumers = full.consumers()
    direct = set()
    seen = set()
    for name, eid in grad_eids.items():
        producer = full.nodes[full.entry_node(eid)]
        if (grad_req[name] == "write" and eid not in variables and eid not in seen
                and not consumers[eid] and full.entry_node(eid) >= num_forward_nodes
                and producer.op is not None):
            direct.add(name)
        seen.add(eid)
    external = variables | {grad_eids[n] for n in direct}
    pinned = set(full.output_eids) - external
    memory = plan_memory(full, all_shapes, all_types, external, pinned, enable_inplace,
                         reuse_memory)
    return Plan(graph=full, symbol_graph=symbol_graph, common_expr_eliminated=common_expr,
                num_forward_nodes=num_forward_nodes, arg_names=arg_names,
                aux_names=aux_names, arg_eids=tuple(graph.row_ptr[i] for i in arg_ids),
                aux_eids=tuple(graph.row_ptr[i] for i in aux_ids),
                output_eids=tuple(graph.output_eids), output_names=output_names,
                shapes=tuple(all_shapes), dtypes=tuple(all_types), grad_req=dict(grad_req),
                grad_eids=grad_eids, direct_grads=frozenset(direct),
                head_grad_eids=head_grad_eids, external=frozenset(external), memory=memory)


def _output_names(graph: Graph) -> list:
    names = []
    for e in graph.outputs:
        node = e.node
        names.append(node.name if node.op is None else node.op.output_names(node.name)[e.index])
    return names
