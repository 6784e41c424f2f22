"""`mx.nd.CachedOp`: a Symbol called like a function on NDArrays.

`CachedOp(sym)(*inputs)` takes one NDArray per `sym.list_inputs()` name, in that order, and
returns the symbol's outputs (one NDArray, or a list). Each node runs as the imperative call
of its operator (`imperative.run_op`), so the results are a bound executor's forward in
inference mode, and under `autograd.record()` every node goes on the tape: gradients flow
through a CachedOp to the arrays it was called on, as MXNet's do.

MXNet's flags (`static_alloc`, `static_shape`, the bulking sizes, `data_indices` ...) tune how
its engine allocates and schedules the graph; they do not change the numbers. They are
accepted and checked by name here, and have nothing to tune: there is no per-call graph
planning to cache.
"""
from __future__ import annotations

from ..base import MXNetError
from .imperative import _write_out, run_op

__all__ = ["CachedOp"]

#: the flag names MXNet 1.9.1's CachedOp accepts
FLAGS = frozenset(("static_alloc", "static_shape", "is_dynamic", "inline_limit",
                   "forward_bulk_size", "backward_bulk_size", "data_indices",
                   "param_indices"))


class CachedOp:
    """A Symbol as a function of NDArrays (see the module docstring)."""

    def __init__(self, sym, flags=()):
        items = flags.items() if isinstance(flags, dict) else flags
        for key, _ in items:
            if key not in FLAGS:
                raise MXNetError("CachedOp: unknown flag '%s' (MXNet's flags: %s)"
                                 % (key, ", ".join(sorted(FLAGS))))
        self._graph = sym._graph
        self._inputs = sym.list_inputs()
        for node in self._graph.nodes:
            if node.op is not None and node.op.subgraphs:
                raise MXNetError("CachedOp: node %s (%s) runs a subgraph; bind the symbol "
                                 "instead" % (node.name, node.op.name))

    def __call__(self, *args, out=None, default_ctx=None):
        if len(args) != len(self._inputs):
            raise MXNetError("CachedOp: %d inputs given, the symbol takes %d (%s)"
                             % (len(args), len(self._inputs), ", ".join(self._inputs)))
        graph = self._graph
        given = dict(zip(self._inputs, args))
        values: dict = {}  # entry id -> NDArray
        for nid, node in enumerate(graph.nodes):
            first = graph.row_ptr[nid]
            if node.op is None:
                values[first] = given[node.name]
                continue
            try:
                inputs = [values[e] for e in graph.input_eids[nid]]
            except KeyError:
                raise MXNetError("CachedOp: node %s reads a hidden output of another node, "
                                 "which an imperative call does not return" % node.name) \
                    from None
            result = run_op(node.name, node.op, inputs)
            for i, r in enumerate(result if isinstance(result, list) else [result]):
                values[first + i] = r
        outputs = [values[e] for e in graph.output_eids]
        if out is not None:
            return _write_out("CachedOp", outputs, out)
        return outputs[0] if len(outputs) == 1 else outputs
