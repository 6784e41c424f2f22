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
`name(shape)@b3` is a value in planned block 3 (`@b3+96`: 96 bytes into it), `@ext` an array
the user owns; a step marked `[in place]` runs nothing, its outputs planned where their
values already are (a reshape's output in its input's bytes, a leading-axis split's parts).
The last three lines end as MXNet's do (MXNet's executor group reads the MB figure, third
from the end).

A plan placed over several devices (`group2ctx`) has a third line, `Placement: dev1 ->
cpu(1), dev2 -> cpu(2), others -> cpu(0); copies: 2 forward, 2 back`, every step line ends with
its device (`on cpu(1)`), each copy node shows where it copies from and to
(`fc1_0_copy (_CrossDeviceCopy cpu(1) -> cpu(2))`, its gradient the other way), and a line per
device gives its planned bytes.
"""
from __future__ import annotations

from ..passes import Plan
from ..passes.placement import is_copy

__all__ = ["plan_listing", "rewrites_text"]


def rewrites_text(plan: Plan) -> str:
    """'cse (no change), device (no change), fuse, batch_last', or 'none'."""
    return ", ".join(name if changed else "%s (no change)" % name
                     for name, changed in plan.rewrites) or "none"


def plan_listing(plan: Plan) -> str:
    graph = plan.graph
    lines = ["Symbol outputs: %s" % ", ".join(plan.output_names),
             "Rewrites: %s" % rewrites_text(plan)]
    if plan.devices is not None:
        lines.append(placement_text(plan))
    for nid, node in enumerate(graph.nodes):
        if node.op is None:
            continue
        phase = "fwd" if nid < plan.num_forward_nodes else "bwd"
        ins = ", ".join(_value_text(plan, e) for e in graph.input_eids[nid])
        outs = ", ".join(_value_text(plan, e)
                         for e in range(graph.row_ptr[nid], graph.row_ptr[nid + 1]))
        lines.append("[%s] %s (%s%s): %s -> %s%s" % (phase, node.name, node.op.name,
                                                    _node_note(plan, nid), ins, outs,
                                                    _device_text(plan, nid)))
    memory = plan.memory
    lines.append("Planned memory: %d bytes in %d blocks (%d in-place) vs %d bytes unplanned"
                 % (memory.planned_bytes, len(memory.block_bytes), memory.inplace_hits,
                    plan.unplanned_bytes))
    if plan.devices is not None:
        lines.extend(_device_bytes(plan))
    lines.append("Total %d MB allocated" % (memory.planned_bytes >> 20))
    lines.append("Total 0 TempSpace resource requested")
    return "\n".join(lines) + "\n"


def _value_text(plan: Plan, eid: int) -> str:
    sid = plan.memory.storage[eid]
    shape = "(" + ",".join(str(d) for d in plan.shapes[eid]) + ")"
    offset = plan.memory.offset(eid)
    where = "ext" if sid < 0 else "b%d" % sid + ("+%d" % offset if offset else "")
    return "%s%s@%s" % (plan.graph.entry_name(eid), shape, where)


def placement_text(plan: Plan) -> str:
    """'Placement: dev1 -> cpu(1), dev2 -> cpu(2), others -> cpu(0); copies: 2 forward, 2
    back' for a plan placed over devices."""
    placement, graph = plan.placement, plan.graph
    groups = ", ".join("%s -> %s" % (g, c) for g, c in sorted(placement.group2ctx.items()))
    copies = [nid for nid, node in enumerate(graph.nodes)
              if node.op is not None and is_copy(node.op)]
    forward = sum(1 for nid in copies if nid < plan.num_forward_nodes)
    return "Placement: %s, others -> %s; copies: %d forward, %d back" % (
        groups, placement.default, forward, len(copies) - forward)


def _node_note(plan: Plan, nid: int) -> str:
    """What the step line says after the op's name: a copy's devices, a layout note, and
    ' [in place]' for a step whose outputs the memory plan put where their values already
    are (it runs nothing), ' [nothing to do]' for one without outputs."""
    graph = plan.graph
    node = graph.nodes[nid]
    idle = "" if nid not in plan.memory.idle_nodes else (
        " [in place]" if node.num_outputs() else " [nothing to do]")
    if plan.devices is not None and is_copy(node.op):
        source = plan.devices[graph.input_eids[nid][-1]]
        return " %s -> %s%s" % (source, plan.devices[graph.row_ptr[nid]], idle)
    return node.op.layout_note() + idle


def _device_text(plan: Plan, nid: int) -> str:
    if plan.devices is None:
        return ""
    return " on %s" % plan.devices[plan.graph.row_ptr[nid]]


def _device_bytes(plan: Plan) -> list:
    """'Planned on cpu(1): N bytes in K blocks', one line per device of a placed plan."""
    memory, per_device = plan.memory, {}
    for size, device in zip(memory.block_bytes, memory.block_devices):
        total, count = per_device.get(device, (0, 0))
        per_device[device] = (total + size, count + 1)
    return ["Planned on %s: %d bytes in %d blocks" % (device, total, count)
            for device, (total, count) in per_device.items()]
