"""The graph compiler: `compile_graph`, from a forward graph to a frozen execution `Plan`.

Stages, in order: inference -> rewrites -> gradient -> memory plan, after the loops of
`mx.sym.contrib.foreach` are unrolled (`passes.control_flow`).

- Inference (`passes.infer`) gives every entry its shape and dtype. It runs when a stage first
  reads them, and again only after a rewrite changed what they describe (`Facts`), so the
  sweeps run on the graph the next stage works on: CSE, which reads neither, runs before the
  first sweep; a rewrite that changes nothing costs no sweep.
- Rewrites (`passes.options`): the ordered list the options give; the plan records which ran
  and which changed the graph (`Plan.rewrites`), and `Executor.debug_str` lists them.
- Gradient (`passes.gradient`): backward nodes appended for the arguments whose grad_req is
  not 'null'; their entries take the shapes and dtypes of forward entries. On a GPU, where
  the step stacking runs, the weight gradients of an unrolled RNN's steps are then stacked
  too (`passes.stack_grads`), and where the fusion runs, a FullyConnected's bias is added by
  the fused LSTM cell or the Activation reading it (`passes.reader_bias`) and each fused
  cell's gradient adds up its output's gradients itself (`passes.fuse_grads`); the listing
  shows them as 'stack_grads', 'reader_bias' and 'fuse_grads' among the rewrites.
- Memory plan (`passes.memory`): a storage block per entry, reusing dead ones.

A model-parallel bind (`group2ctx`) passes a `Placement`: the placement pass
(`passes.placement`) then runs after the gradient pass, as MXNet's does, giving every node a
device and putting copy nodes between devices, and the memory plan keeps the blocks of each
device apart. Without one the plan is the single-device plan, unchanged.

It allocates nothing: the executor binds a plan to a device. (DESIGN lists Plan under
executor/; it is defined here so that the passes, which build it, do not import the executor,
which runs it.)
"""
from __future__ import annotations

import dataclasses
import warnings
from typing import Mapping, NamedTuple, Optional

import numpy as np

from ..base import BindError, ShapeError
from ..graph import Graph
from ..ops.registry import fmt_shape, shape_is_known
from .control_flow import unroll_loops
from .fuse_grads import fuse_gradient_sums
from .gradient import build_gradient
from .infer import infer_graph_shapes, infer_graph_types
from .memory import MemoryPlan, entry_nbytes, plan_memory
from .options import FUSE, STACK, CompileOptions
from .placement import Placement, place
from .reader_bias import add_biases_in_readers
from .stack_grads import stack_weight_grads

__all__ = ["Plan", "Facts", "compile_graph", "normalize_grad_req", "GRAD_REQS"]

GRAD_REQS = ("write", "add", "null")


@dataclasses.dataclass(frozen=True)
class Plan:
    """Everything the executor needs, decided before any array exists.

    Steps are the op nodes of `graph` in order; those with id < `num_forward_nodes` form the
    forward pass, the rest the backward pass. `rewrites` holds (name, changed the graph) for
    each rewrite that ran, in order. `symbol_graph` is the forward graph after the leading
    rewrites that keep MXNet's ops (common-subexpression elimination), before the device,
    fusion and layout rewrites: what `Executor.get_optimized_symbol` returns. `options` are
    the ones the plan was compiled with (a reshape compiles with them again), and so is
    `placement`. `devices` is None for a plan on one device, else the Context of every entry
    (a node runs on the device of its first output).
    """

    graph: Graph
    symbol_graph: Graph
    options: CompileOptions
    rewrites: tuple
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
    placement: Optional[Placement] = None
    devices: Optional[tuple] = None

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


class Facts:
    """The forward graph being compiled, with its shapes and dtypes per entry, each inferred
    when first read after the graph last changed in a way that makes it stale."""

    def __init__(self, graph: Graph, shapes: Mapping[str, tuple],
                 dtypes: Mapping[str, np.dtype], default_dtype: Optional[np.dtype]):
        self.graph = graph
        self._given_shapes = shapes
        self._known_types = dict(dtypes)
        self._default_dtype = default_dtype
        self._shapes: Optional[list] = None
        self._types: Optional[list] = None

    @property
    def shapes(self) -> list:
        if self._shapes is None:
            self._shapes = _checked_shapes(self.graph, self._given_shapes)
        return self._shapes

    @property
    def types(self) -> list:
        if self._types is None:
            _ = self.shapes  # a graph whose shapes cannot be decided says so first
            self._types = _inferred_types(self.graph, self._known_types, self._default_dtype)
        return self._types

    def replace(self, graph: Graph, stale: tuple) -> None:
        """Work on `graph` from now on; the facts named in `stale` no longer describe it."""
        self.graph = graph
        if "shapes" in stale:
            self._shapes = None
        if "types" in stale:
            self._types = None


def _checked_shapes(graph: Graph, shapes: Mapping[str, tuple]) -> list:
    """Every entry's shape; a ShapeError naming what to give when some cannot be decided."""
    inferred = infer_graph_shapes(graph, shapes)
    missing = [graph.nodes[i].name for i in graph.variable_ids()
               if not shape_is_known(inferred[graph.row_ptr[i]])]
    if not missing and all(shape_is_known(s) for s in inferred):
        return inferred
    if missing:
        detail = ", ".join("%s: %s" % (graph.nodes[i].name, fmt_shape(inferred[graph.row_ptr[i]]))
                           for i in graph.variable_ids() if graph.nodes[i].name in missing)
        raise ShapeError("cannot decide every shape; give the shapes of: %s" % detail)
    dynamic = [n for n in graph.nodes if n.op is not None and n.op.dynamic_shape]
    if dynamic:
        raise ShapeError(
            "%s (%s): its output shape depends on the input values, and a bound graph needs "
            "shapes it can plan; call mx.nd.%s imperatively instead"
            % (dynamic[0].name, dynamic[0].op.name, dynamic[0].op.name.replace("_contrib_",
                                                                                "contrib.")))
    bad = [graph.entry_name(e) for e, s in enumerate(inferred) if not shape_is_known(s)]
    raise ShapeError("cannot decide every shape; give the shapes of: outputs %s"
                     % ", ".join(bad[:5]))


def _inferred_types(graph: Graph, known: dict, default_dtype: Optional[np.dtype]) -> list:
    """Every entry's dtype; variables nothing types get `default_dtype` (added to `known`)."""
    types = infer_graph_types(graph, known)
    if default_dtype is None or all(t is not None for t in types):
        return types
    for i in graph.variable_ids():
        name = graph.nodes[i].name
        if types[graph.row_ptr[i]] is None and name not in known:
            known[name] = default_dtype
    return infer_graph_types(graph, known)


def _rewrite(facts: Facts, rewrites: tuple, ctx) -> tuple:
    """Run `rewrites` in order on `facts.graph`; (the graph `get_optimized_symbol` shows,
    ((name, changed the graph), ...))."""
    symbol_graph, ran, mxnet_ops = facts.graph, [], True
    for rewrite in rewrites:
        new = rewrite.run(facts, ctx)
        changed = new is not facts.graph
        if changed:
            facts.replace(new, rewrite.stale)
        ran.append((rewrite.name, changed))
        mxnet_ops = mxnet_ops and rewrite.mxnet_ops
        if mxnet_ops:
            symbol_graph = facts.graph
    return symbol_graph, tuple(ran)


class _Backward(NamedTuple):
    """The forward graph with its backward nodes, and what the plan needs to know of them."""

    graph: Graph
    shapes: list
    dtypes: list
    grad_eids: dict
    head_grad_eids: tuple
    num_forward_nodes: int
    sources: dict  # backward entry id -> the forward entry whose shape and dtype it has
    # placed plans: the device of every entry, and the id of each entry of the graph before
    # the copies were put in
    devices: Optional[tuple] = None
    entry_map: Optional[tuple] = None


def _differentiate(facts: Facts, wrt: list) -> _Backward:
    """Append the backward nodes for the gradients of `wrt` (none: the forward graph)."""
    fwd, shapes, types = facts.graph, facts.shapes, facts.types
    if not wrt:
        return _Backward(fwd, list(shapes), list(types), {}, tuple(None for _ in fwd.outputs),
                         len(fwd.nodes), {})
    gg = build_gradient(fwd, wrt)
    full = gg.graph
    all_shapes = list(shapes) + [None] * (full.num_entries - fwd.num_entries)
    all_types = list(types) + [None] * (full.num_entries - fwd.num_entries)
    for eid, src in gg.shape_source.items():
        all_shapes[eid] = shapes[src]
        all_types[eid] = types[src]
    head_grad_eids = tuple(None if nid is None else full.row_ptr[nid]
                           for nid in gg.head_grad_nodes)
    return _Backward(full, all_shapes, all_types, dict(zip(wrt, gg.grad_eids)), head_grad_eids,
                     gg.num_forward_nodes, gg.shape_source)


def _placed(bwd: _Backward, fwd: Graph, wrt: list, placement: Placement) -> _Backward:
    """`bwd` with its nodes placed on devices and copy nodes between them."""
    placed = place(bwd.graph, fwd, bwd.sources, wrt, placement)
    graph, old_shapes = placed.graph, bwd.shapes
    # a gradient may now come out of the copy that brings it to its variable
    grad_eids = {name: graph.output_eids[len(fwd.outputs) + i] for i, name in enumerate(wrt)}
    return _Backward(
        graph, [old_shapes[e] for e in placed.origins], [bwd.dtypes[e] for e in placed.origins],
        grad_eids, tuple(None if e is None else placed.entry_map[e] for e in bwd.head_grad_eids),
        placed.num_forward_nodes, {}, placed.devices, placed.entry_map)


def _gradient_rewrites(bwd: _Backward, num_outputs: int, options: CompileOptions, ctx,
                       ran: tuple) -> tuple:
    """(`bwd` after the rewrites of the graph with its gradient nodes, `ran` with each and
    whether it changed anything): on GPUs the stacking of an unrolled RNN's weight gradients
    (`passes.stack_grads`, with the step stacking), and with the fusion the biases added by
    their readers (`passes.reader_bias`) and the fused cells' gradient sums
    (`passes.fuse_grads`). The
    result's `sources` are left empty: only placement reads them, and a placed plan runs
    none of these."""
    for rewrite, name, switch in ((stack_weight_grads, "stack_grads", STACK),
                                  (add_biases_in_readers, "reader_bias", FUSE),
                                  (fuse_gradient_sums, "fuse_grads", FUSE)):
        if switch not in options.rewrites:
            continue
        graph, shapes, dtypes = rewrite(bwd.graph, bwd.shapes, bwd.dtypes,
                                        bwd.num_forward_nodes, ctx)
        ran += ((name, graph is not bwd.graph),)
        if graph is not bwd.graph:
            grad_eids = dict(zip(bwd.grad_eids, graph.output_eids[num_outputs:]))
            bwd = bwd._replace(graph=graph, shapes=shapes, dtypes=dtypes, grad_eids=grad_eids,
                               sources={})
    return bwd, ran


def _rewrites_for(options: CompileOptions, placement: Optional[Placement]) -> tuple:
    """The rewrites to run: all the options name, less those made for one device type
    (`Rewrite.per_device`) when the placement mixes device types."""
    if placement is None or placement.one_device_type:
        return options.rewrites
    return tuple(r for r in options.rewrites if not r.per_device)


def _final_ids(bwd: _Backward, eids) -> tuple:
    """Entry ids of the graph before placement as ids of `bwd.graph`."""
    if bwd.entry_map is None:
        return tuple(eids)
    return tuple(bwd.entry_map[e] for e in eids)


def _direct_grads(bwd: _Backward, grad_req: Mapping[str, str]) -> set:
    """The arguments whose gradient a backward node may write straight into the user's array:
    'write' gradients computed by one op node of their own that nothing else reads."""
    full = bwd.graph
    variables = {full.row_ptr[i] for i in full.variable_ids()}
    consumers = full.consumers()
    direct, seen = set(), set()
    for name, eid in bwd.grad_eids.items():
        producer = full.entry_node(eid)
        if (grad_req[name] == "write" and eid not in variables and eid not in seen
                and not consumers[eid] and producer >= bwd.num_forward_nodes
                and full.nodes[producer].op is not None):
            direct.add(name)
        seen.add(eid)
    return direct


def compile_graph(graph: Graph, shapes: Mapping[str, tuple], dtypes: Mapping[str, np.dtype],
                  grad_req: Mapping[str, str], options: CompileOptions = CompileOptions(),
                  ctx=None, placement: Optional[Placement] = None) -> Plan:
    """Infer, rewrite, differentiate and plan `graph` for the given input shapes and dtypes.

    `options` say which rewrites run, in which order, and how memory is planned; `ctx` is the
    Context the plan will run on (the device rewrite picks each op's variant for it, and
    fusion and batch-last storage apply on CPUs). `placement` spreads the nodes over devices
    (`passes.placement`; `ctx` is then the default device); where it mixes device types, the
    rewrites made for one device type (`Rewrite.per_device`) do not run. The outputs keep the
    names the symbol gives them whatever the rewrites do.
    """
    output_names = tuple(_output_names(graph))
    facts = Facts(unroll_loops(graph, shapes), shapes, dtypes, options.default_dtype)
    symbol_graph, ran = _rewrite(facts, _rewrites_for(options, placement), ctx)
    fwd = facts.graph  # the rewrites keep the variables, in their order
    arg_names = tuple(fwd.nodes[i].name for i in fwd.argument_ids())
    wrt = [n for n in arg_names if grad_req.get(n, "null") != "null"]
    bwd = _differentiate(facts, wrt)
    if placement is None:  # (a plan without gradients: on its forward nodes)
        bwd, ran = _gradient_rewrites(bwd, len(fwd.outputs), options, ctx, ran)
    if placement is not None:
        bwd = _placed(bwd, fwd, wrt, placement)
    direct = _direct_grads(bwd, grad_req)
    full = bwd.graph
    external = {full.row_ptr[i] for i in full.variable_ids()} | {bwd.grad_eids[n]
                                                                 for n in direct}
    pinned = set(full.output_eids) - external
    memory = plan_memory(full, bwd.shapes, bwd.dtypes, external, pinned, options.inplace,
                         options.reuse_memory, bwd.devices)
    return Plan(graph=full, symbol_graph=symbol_graph, options=options, rewrites=ran,
                num_forward_nodes=bwd.num_forward_nodes, arg_names=arg_names,
                aux_names=tuple(fwd.nodes[i].name for i in fwd.aux_ids()),
                arg_eids=_final_ids(bwd, (fwd.row_ptr[i] for i in fwd.argument_ids())),
                aux_eids=_final_ids(bwd, (fwd.row_ptr[i] for i in fwd.aux_ids())),
                output_eids=_final_ids(bwd, fwd.output_eids), output_names=output_names,
                shapes=tuple(bwd.shapes), dtypes=tuple(bwd.dtypes), grad_req=dict(grad_req),
                grad_eids=bwd.grad_eids, direct_grads=frozenset(direct),
                head_grad_eids=bwd.head_grad_eids, external=frozenset(external), memory=memory,
                placement=placement, devices=bwd.devices)


def _output_names(graph: Graph) -> list:
    names = []
    for e in graph.outputs:
        node = e.node
        names.append(node.name if node.op is None else node.op.output_names(node.name)[e.index])
    return names
