"""`plan_listing`: a Plan as the text `Executor.debug_str()` prints, for a student to read.

    Symbol outputs: softmax_output
    Rewrites: cse (no change), device (no change), fuse, batch_last
    [fwd] conv (Convolution [batch-last out]): data(8,1,10,10)@ext, ... -> conv_output(4,8,8,8)@b0
    [fwd] pool (Activation+Pooling [batch-last in, out]): conv_output(4,8,8,8)@b0 -> ...
    ...
    [bwd] fc_backward (_backward_FullyConnected): ...
    Planned memory: N bytes in K blocks (I in-place) vs M bytes unplanned
    Total 0 MB allocated
    Total 0 TempSpace resource requested

The second line names the rewrites the compiler ran, in order, and says which of them left
the graph as it was; the step lines are the graph that runs, after those rewrites: a fused
node shows its fused op (`Activation+Pooling`), a node storing data batch-last says so.
`name(shape)@b3` is a value in planned block 3, `@ext` an array the user owns. The last three
lines end as MXNet's do (MXNet's executor group reads the MB figure, third from the end).
"""
from __future__ import annotations

from ..passes import Plan

__all__ = ["plan_listing", "rewrites_text"]


def rewrites_text(plan: Plan) -> str:
    """'cse (no change), device (no change), fuse, batch_last', or 'none'."""
    return ", ".join(name if changed else "%s (no change)" % name
                     for name, changed in plan.rewrites) or "none"


def plan_listing(plan: Plan) -> str:
    graph = plan.graph
    lines = ["Symbol outputs: %s" % ", ".join(plan.output_names),
             "Rewrites: %s" % rewrites_text(plan)]
    for nid, node in enumerate(graph.nodes):
        if node.op is None:
            continue
        phase = "fwd" if nid < plan.num_forward_nodes else "bwd"
        ins = ", ".join(_value_text(plan, e) for e in graph.input_eids[nid])
        outs = ", ".join(_value_text(plan, e)
                         for e in range(graph.row_ptr[nid], graph.row_ptr[nid + 1]))
        lines.append("[%s] %s (%s%s): %s -> %s" % (phase, node.name, node.op.name,
                                                  node.op.layout_note(), ins, outs))
    memory = plan.memory
    lines.append("Planned memory: %d bytes in %d blocks (%d in-place) vs %d bytes unplanned"
                 % (memory.planned_bytes, len(memory.block_bytes), memory.inplace_hits,
                    plan.unplanned_bytes))
    lines.append("Total %d MB allocated" % (memory.planned_bytes >> 20))
    lines.append("Total 0 TempSpace resource requested")
    return "\n".join(lines) + "\n"


def _value_text(plan: Plan, eid: int) -> str:
    sid = plan.memory.storage[eid]
    shape = "(" + ",".join(str(d) for d in plan.shapes[eid]) + ")"
    return "%s%s@%s" % (plan.graph.entry_name(eid), shape, "ext" if sid < 0 else "b%d" % sid)
