"""The placement pass (passes/placement.py) on the shared graphs with groups drawn at random:
every node reads only values of its own device (copies carry the rest, forward and back), no
memory block holds values of two devices, aux states stay with their nodes, and the placed
executor writes the ungrouped executor's outputs and gradients byte for byte."""
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import minimod as mx
from minimod.passes.placement import GROUP_KEY, is_copy

from .graphs import GRAPHS, assert_same_step

DEVICES = (mx.cpu(0), mx.cpu(1), mx.cpu(2))


def _grouped(name: str, groups: list):
    """GRAPHS[name] with node i of its graph (variables too) in group `groups[i]` (None: no
    group)."""
    sym, shapes = GRAPHS[name]()
    for node, group in zip(sym._graph.nodes, groups):
        if group is not None:
            node.attrs[GROUP_KEY] = group
    return sym, shapes


def _fill(exe):
    rng = np.random.RandomState(0)
    for name, arr in exe.arg_dict.items():
        arr[:] = (rng.randint(0, 3, arr.shape) if name == "softmax_label"
                  else rng.uniform(-1, 1, arr.shape).astype(np.float32))


def _check_invariants(exe):
    plan = exe._plan
    graph = plan.graph
    for nid, node in enumerate(graph.nodes):
        if node.op is None or is_copy(node.op):
            continue
        here = plan.devices[graph.row_ptr[nid]]
        assert all(plan.devices[e] == here for e in graph.input_eids[nid]), node.name
    for eid, sid in enumerate(plan.memory.storage):
        if sid >= 0:
            assert plan.memory.block_devices[sid] == plan.devices[eid]
    for name, eid in zip(plan.aux_names, plan.aux_eids):
        assert exe.aux_dict[name].context == plan.devices[eid]
    for name, eid in zip(plan.arg_names, plan.arg_eids):
        assert exe.arg_dict[name].context == plan.devices[eid]
        if exe.grad_dict[name] is not None:
            assert exe.grad_dict[name].context == plan.devices[eid]


@given(data=st.data(), name=st.sampled_from(sorted(GRAPHS)))
def test_random_groups_place_and_compute_as_the_ungrouped_graph(data, name):
    size = len(GRAPHS[name]()[0]._graph.nodes)
    groups = data.draw(st.lists(st.sampled_from([None, "g0", "g1", "g2"]), min_size=size,
                                max_size=size))
    sym, shapes = _grouped(name, groups)
    group2ctx = {"g%d" % i: ctx for i, ctx in enumerate(DEVICES)}
    placed = sym.simple_bind(mx.cpu(0), group2ctx=group2ctx, **shapes)
    plain = sym.simple_bind(mx.cpu(0), **shapes)
    if placed._plan.devices is not None:
        _check_invariants(placed)
    for exe in (placed, plain):
        _fill(exe)
        exe.forward(is_train=True)
        exe.backward()
    assert_same_step(placed, plain)
