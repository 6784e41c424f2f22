"""Shape and dtype inference over a Graph.

Both are fixed-point sweeps: each op fills in what it can deduce from the shapes known so far,
forwards (weights from data) and backwards (a zeros begin-state's batch size from the op that
consumes it). Sweeps alternate direction until nothing changes. Errors name the node, its op,
the slot and both shapes.
"""
from __future__ import annotations

import functools
from typing import Mapping, Optional

import numpy as np

from ..base import DTypeError, MXNetError, ShapeError
from ..graph import DTYPE_MX_TO_NP, Graph, parse_shape_attr
from ..ops.registry import fmt_shape, merge_shape, shape_is_known
from ..shape_semantics import is_np_shape

__all__ = ["FLOAT_DTYPES", "infer_graph_shapes", "infer_graph_types", "variable_shape_attr"]

#: float32 and float64: the dtypes the GPU rewrites take (the fused kernels are written for
#: them, and the products they make go through cuBLAS directly)
FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

_MAX_SWEEPS = 50


def variable_shape_attr(node) -> Optional[tuple]:
    text = node.attrs.get("__shape__")
    if not text:
        return None
    return parse_shape_attr(text)


def _slot_name(node, pos: int, is_input: bool) -> str:
    if is_input:
        return "input '%s'" % node.op._in_name(pos)
    return "output '%s'" % node.op.outputs()[pos]


def _run_node(graph: Graph, nid: int, table: list, fn_name: str, merge, fmt) -> bool:
    node = graph.nodes[nid]
    in_eids = graph.input_eids[nid]
    first = graph.row_ptr[nid]
    out_eids = range(first, graph.row_ptr[nid + 1])
    ins = [table[e] for e in in_eids]
    outs = [table[e] for e in out_eids]
    if node.op.subgraphs:
        rule = functools.partial(_through_body, node, fn_name == "infer_shape", merge, fmt)
    else:
        rule = getattr(node.op, fn_name)
    try:
        new_ins, new_outs = rule(list(ins), list(outs))
    except MXNetError as err:
        raise type(err)("%s (%s): %s" % (node.name, node.op.name, err)) from None
    changed = False
    for is_input, eids, old, new in ((True, in_eids, ins, new_ins), (False, out_eids, outs,
                                                                      new_outs)):
        for pos, (eid, before, after) in enumerate(zip(eids, old, new)):
            # `is None` first: NumPy reads None as float64, so dtype('float64') == None holds
            if after is None or (before is not None and after == before):
                continue
            try:
                merged = merge(table[eid], after)
            except ValueError:
                err_cls = ShapeError if fn_name == "infer_shape" else DTypeError
                raise err_cls("%s (%s): %s is %s but the operator infers %s"
                              % (node.name, node.op.name, _slot_name(node, pos, is_input),
                                 fmt(table[eid]), fmt(after))) from None
            if table[eid] is None or merged != table[eid]:
                table[eid] = merged
                changed = True
    return changed


def _through_body(node, shapes: bool, merge, fmt, ins: list, outs: list) -> tuple:
    """A `_foreach` node's rule (minimod/ops/control_flow.py) for shapes (`shapes`) or
    dtypes: infer its body with what is known of the loop's inputs and outputs (a data
    array's step is its shape without axis 0, a state leaves as it enters), then read the
    body's variables and outputs back."""
    op, body = node.op, node.op.body
    roles = op.input_roles()
    n_out, var_ids = op.attrs.num_out_data, body.variable_ids()
    state_out = {pos: n_out + k for k, pos in enumerate(
        p for p, (role, _) in enumerate(roles) if role == "state")}
    steps = None
    if shapes:  # the loop's length, from a data array or a stacked output
        steps = next((s[0] for s in [ins[p] for p, (r, _) in enumerate(roles) if r == "data"]
                      + outs[:n_out] if s is not None and len(s) and s[0] is not None), None)
    known, rank_1 = {}, set()
    for pos, (role, loc) in enumerate(roles):
        value = ins[pos] if ins[pos] is not None or role != "state" else outs[state_out[pos]]
        if value is not None and role == "data" and shapes:
            value = tuple(value[1:])
            if not value and not is_np_shape():  # MXNet's legacy semantics: no 0-d arrays,
                value = (1,)                     # so a 1-D array's steps are (1,)
                rank_1.add(pos)
        if value is not None:
            known[body.nodes[var_ids[loc]].name] = value
    table = (infer_graph_shapes if shapes else infer_graph_types)(body, known)

    def looped(value, stacked: bool):
        return (steps,) + tuple(value) if stacked and shapes and value is not None else value
    new_ins = [(steps,) if pos in rank_1 else looped(table[body.row_ptr[var_ids[loc]]],
                                                     role == "data")
               for pos, (role, loc) in enumerate(roles)]
    new_outs = [looped(table[eid], k < n_out) for k, eid in enumerate(body.output_eids)]
    for pos, k in state_out.items():
        try:
            new_ins[pos] = new_outs[k] = merge(new_ins[pos], new_outs[k])
        except ValueError:
            raise (ShapeError if shapes else DTypeError)(
                "loop state %d enters the body as %s and leaves it as %s"
                % (k - n_out, fmt(new_ins[pos]), fmt(new_outs[k]))) from None
    return new_ins, new_outs


def _sweep(graph: Graph, table: list, fn_name: str, merge, fmt, complete) -> list:
    """Run every op node until nothing changes.

    A node is settled once it has run with all of its slots complete afterwards: its op then
    saw (or made) every shape and agreed with them, and complete entries never change again.
    Every other node runs in each sweep, so a node whose slots were all filled in by its
    neighbours is still checked: `transpose(v) + (x + v)` with x (2, 3) fails at the
    transpose even though the outputs are decided without it, as in MXNet.
    """
    op_ids = [i for i, n in enumerate(graph.nodes) if n.op is not None]
    settled = [False] * len(graph.nodes)
    for sweep in range(_MAX_SWEEPS):
        changed = False
        order = op_ids if sweep % 2 == 0 else reversed(op_ids)
        for nid in order:
            if settled[nid]:
                continue
            changed |= _run_node(graph, nid, table, fn_name, merge, fmt)
            first, last = graph.row_ptr[nid], graph.row_ptr[nid + 1]
            settled[nid] = (all(complete(table[e]) for e in graph.input_eids[nid])
                            and all(complete(table[e]) for e in range(first, last)))
        if not changed:
            break
    return table


def infer_graph_shapes(graph: Graph, known: Mapping[str, Optional[tuple]]) -> list:
    """Per entry id, its shape (dims may be None where they cannot be decided).

    A variable's declared shape (`Variable(shape=...)`, the `__shape__` attribute) is a hint
    used only where `known` gives none: a shape passed to infer_shape or bind wins, as in
    MXNet, which reads the attribute only for inputs still unknown.
    """
    table: list = [None] * graph.num_entries
    for nid in graph.variable_ids():
        node = graph.nodes[nid]
        given = known.get(node.name)
        table[graph.row_ptr[nid]] = variable_shape_attr(node) if given is None else given
    return _sweep(graph, table, "infer_shape", merge_shape, fmt_shape, shape_is_known)


def _merge_dtype(have, new):
    if new is not None:
        new = np.dtype(new)
    if have is None:
        return new
    if new is None or have == new:
        return have
    raise ValueError("dtype differs")


def _fmt_dtype(dtype) -> str:
    return "unknown" if dtype is None else np.dtype(dtype).name


def infer_graph_types(graph: Graph, known: Mapping[str, np.dtype]) -> list:
    """Per entry id, its numpy dtype (None where it cannot be decided).

    Like a declared shape, a declared dtype (`Variable(dtype=...)`, `__dtype__`) is a hint
    for variables `known` leaves out: the dtype of a bound array or of `type_dict` wins.
    """
    table: list = [None] * graph.num_entries
    for nid in graph.variable_ids():
        node = graph.nodes[nid]
        given = known.get(node.name)
        if given is not None:
            dtype = np.dtype(given)
        elif "__dtype__" in node.attrs:
            dtype = np.dtype(DTYPE_MX_TO_NP[int(node.attrs["__dtype__"])])
        else:
            dtype = None
        table[graph.row_ptr[nid]] = dtype
    return _sweep(graph, table, "infer_type", _merge_dtype, _fmt_dtype,
                  lambda t: t is not None)
