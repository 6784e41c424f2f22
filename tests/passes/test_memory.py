"""The memory plan is safe: planned buffers give exactly the results of a fresh array per entry."""
import numpy as np
import pytest

import minimod as mx
from minimod.executor import simple_bind
from minimod.passes import compile_graph, normalize_grad_req

from .graphs import GRAPHS


def _fill(exe, rng, vocab=9):
    for name, arr in exe.arg_dict.items():
        if name == "data" and arr.ndim == 2 and "embed_weight" in exe.arg_dict:
            arr[:] = rng.randint(0, vocab, size=arr.shape)
        elif name == "softmax_label":
            arr[:] = rng.randint(0, 5, size=arr.shape)
        else:
            arr[:] = rng.uniform(-0.5, 0.5, size=arr.shape)
    for name, arr in exe.aux_dict.items():
        arr[:] = rng.uniform(0.5, 1.0, size=arr.shape)


def _run(sym, shapes, reuse):
    exe = simple_bind(sym, mx.cpu(), grad_req="write", shapes=shapes, reuse_memory=reuse)
    _fill(exe, np.random.RandomState(3))
    results = []
    for step in range(2):  # twice: stale values left in reused blocks must not leak in
        outs = [o.asnumpy().copy() for o in exe.forward(is_train=True)]
        exe.backward()
        grads = {k: v.asnumpy().copy() for k, v in exe.grad_dict.items() if v is not None}
        aux = {k: v.asnumpy().copy() for k, v in exe.aux_dict.items()}
        results.append((outs, grads, aux))
    return exe, results


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_planned_equals_fresh(name):
    sym, shapes = GRAPHS[name]()
    planned_exe, planned = _run(sym, shapes, reuse=True)
    fresh_exe, fresh = _run(sym, shapes, reuse=False)
    for (po, pg, pa), (fo, fg, fa) in zip(planned, fresh):
        for a, b in zip(po, fo):
            np.testing.assert_array_equal(a, b)
        assert pg.keys() == fg.keys()
        for k in pg:
            np.testing.assert_array_equal(pg[k], fg[k], err_msg=k)
        for k in pa:
            np.testing.assert_array_equal(pa[k], fa[k], err_msg=k)
    # the plan really saves memory, and reports both figures
    planned_bytes = planned_exe._plan.memory.planned_bytes
    assert planned_bytes < fresh_exe._plan.memory.planned_bytes
    assert planned_bytes < planned_exe._plan.unplanned_bytes
    text = planned_exe.debug_str()
    assert "%d bytes in" % planned_bytes in text
    assert "%d bytes unplanned" % planned_exe._plan.unplanned_bytes in text
    assert text.split("\n")[-3].startswith("Total ") and text.split("\n")[-3].endswith(
        "MB allocated")


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_no_two_live_entries_share_a_block(name):
    """Directly on the plan: an entry's block is not handed to another entry while it lives."""
    sym, shapes = GRAPHS[name]()
    graph = sym._graph
    reqs = normalize_grad_req("write", sym.list_arguments())
    plan = compile_graph(graph, shapes, {}, reqs)
    full = plan.graph
    storage = plan.memory.storage
    last = [-1] * full.num_entries
    for nid, eids in enumerate(full.input_eids):
        for e in eids:
            last[e] = nid
    pinned = set(full.output_eids)
    owner = {}  # block -> (entry, dies_at)
    for nid, node in enumerate(full.nodes):
        if node.op is None:
            continue
        inplace = {(full.input_eids[nid][i], full.row_ptr[nid] + o) for i, o in node.op.inplace}
        for e in range(full.row_ptr[nid], full.row_ptr[nid + 1]):
            sid = storage[e]
            if sid < 0:
                continue
            if sid in owner:
                prev, dies = owner[sid]
                assert dies < nid or (dies == nid and (prev, e) in inplace), (
                    full.entry_name(prev), full.entry_name(e))
                assert prev not in pinned
            end = float("inf") if e in pinned else (last[e] if last[e] >= 0 else nid)
            owner[sid] = (e, end)


def test_inplace_reuse_happens():
    sym, shapes = GRAPHS["mlp"]()
    plan = compile_graph(sym._graph, shapes, {}, normalize_grad_req("null",
                                                                     sym.list_arguments()))
    assert plan.memory.inplace_hits >= 1
