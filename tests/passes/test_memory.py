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
    """Directly on the plan: an entry's block is not handed to another entry while it lives,
    except to a view of it (a reshape's output), which then keeps the block as long as either
    lives."""
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
    owner = {}  # block -> (entry, until when the block is held)
    for nid, node in enumerate(full.nodes):
        if node.op is None:
            continue
        ins = full.input_eids[nid]
        inplace = {(ins[i], full.row_ptr[nid] + o) for i, o in node.op.inplace}
        views = {(ins[i], full.row_ptr[nid] + o) for i, o in node.op.views}
        for e in range(full.row_ptr[nid], full.row_ptr[nid + 1]):
            sid = storage[e]
            if sid < 0:
                continue
            end = float("inf") if e in pinned else (last[e] if last[e] >= 0 else nid)
            if sid in owner:
                prev, dies = owner[sid]
                if (prev, e) in views or any(storage[a] == sid for a, b in views if b == e):
                    owner[sid] = (e, max(dies, end))
                    continue
                assert dies < nid or (dies == nid and (prev, e) in inplace), (
                    full.entry_name(prev), full.entry_name(e))
                assert prev not in pinned
            owner[sid] = (e, end)


def test_inplace_reuse_happens():
    sym, shapes = GRAPHS["mlp"]()
    plan = compile_graph(sym._graph, shapes, {}, normalize_grad_req("null",
                                                                     sym.list_arguments()))
    assert plan.memory.inplace_hits >= 1


def _views_graph():
    """fc is read by three reshapes and by the add: its block stays live past each view."""
    x = mx.sym.Variable("x")
    fc = mx.sym.FullyConnected(x, num_hidden=6, name="fc")
    wide = mx.sym.expand_dims(fc, axis=1, name="wide")
    back = mx.sym.Reshape(wide, shape=(-1, 6), name="back")
    flat = mx.sym.Flatten(wide, name="flat")
    both = mx.sym.broadcast_add(back, fc, name="both") * flat
    return mx.sym.MakeLoss(mx.sym.sum(mx.sym.BlockGrad(fc) + both), name="loss")


def test_reshapes_of_a_live_entry_share_its_bytes_and_run_nothing():
    sym, shapes = _views_graph(), {"x": (4, 3)}
    exe, planned = _run(sym, shapes, reuse=True)
    plan = exe._plan
    graph = plan.graph
    eid = {graph.entry_name(e): e for e in range(graph.num_entries)}
    fc, wide = eid["fc_output"], eid["wide_output"]
    assert plan.memory.shares(fc, wide) and plan.memory.shares(wide, eid["back_output"])
    assert plan.memory.shares(wide, eid["flat_output"])
    assert plan.memory.view_hits >= 4  # the three reshapes, BlockGrad, and their gradients
    # the fc output is read after the views are made, and its block is not reused before
    assert not plan.memory.shares(fc, eid["both_output"])
    steps = {s.node.name: s for s in exe._steps.train}
    idle = [name for name, s in steps.items() if s.run.__name__ == "_nothing_to_do"]
    assert {"wide", "back", "flat"} <= set(idle)
    assert any(not s.forward for s in exe._steps.train if s.run.__name__ == "_nothing_to_do")
    _, fresh = _run(sym, shapes, reuse=False)
    for (po, pg, _), (fo, fg, _) in zip(planned, fresh):
        np.testing.assert_array_equal(po[0], fo[0])
        for k in pg:
            np.testing.assert_array_equal(pg[k], fg[k], err_msg=k)
    # fc's gradient: d/dfc sum(2 fc * fc) = 4 fc, through the views and their gradients
    x, w, b = (exe.arg_dict[k].asnumpy() for k in ("x", "fc_weight", "fc_bias"))
    np.testing.assert_allclose(pg["fc_weight"], (4 * (x @ w.T + b)).T @ x, rtol=1e-5)


def test_views_off_with_inplace_off():
    """CompileOptions(inplace=False) turns the views off too: every step copies."""
    sym = _views_graph()
    reqs = normalize_grad_req("write", sym.list_arguments())
    plan = compile_graph(sym._graph, {"x": (4, 3)}, {}, reqs,
                         options=mx.passes.CompileOptions(inplace=False))
    assert plan.memory.view_hits == 0
