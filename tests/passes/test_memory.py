"""The memory plan is safe: planned buffers give exactly the results of a fresh array per entry."""
import numpy as np
import pytest

import minimod as mx
from minimod.executor import simple_bind
from minimod.passes import compile_graph, normalize_grad_req
from minimod.passes.memory import entry_nbytes

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


def _assert_same(planned, fresh):
    """Every step's outputs, gradients and aux states of two `_run`s are equal bit for bit."""
    for (po, pg, pa), (fo, fg, fa) in zip(planned, fresh):
        for a, b in zip(po, fo):
            np.testing.assert_array_equal(a, b)
        assert pg.keys() == fg.keys()
        for k in pg:
            np.testing.assert_array_equal(pg[k], fg[k], err_msg=k)
        for k in pa:
            np.testing.assert_array_equal(pa[k], fa[k], err_msg=k)


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_planned_equals_fresh(name):
    sym, shapes = GRAPHS[name]()
    planned_exe, planned = _run(sym, shapes, reuse=True)
    fresh_exe, fresh = _run(sym, shapes, reuse=False)
    _assert_same(planned, fresh)
    # the plan really saves memory, and reports both figures
    planned_bytes = planned_exe._plan.memory.planned_bytes
    assert planned_bytes < fresh_exe._plan.memory.planned_bytes
    assert planned_bytes < planned_exe._plan.unplanned_bytes
    text = planned_exe.debug_str()
    assert "%d bytes in" % planned_bytes in text
    assert "%d bytes unplanned" % planned_exe._plan.unplanned_bytes in text
    assert text.split("\n")[-3].startswith("Total ") and text.split("\n")[-3].endswith(
        "MB allocated")


def _assert_no_live_overlap(plan):
    """No entry's bytes are given to another while it lives, except to its own view, part or
    join (the other entry is an input of the node making this one, or the entry such an
    input views, and the node declares that), or to an in-place output of the node that
    reads it last."""
    full, memory = plan.graph, plan.memory
    last = [-1] * full.num_entries
    for nid, eids in enumerate(full.input_eids):
        for e in eids:
            last[e] = nid
    pinned = set(full.output_eids)
    live = {}  # entry -> (block, first byte, end byte, last reader)
    for nid, node in enumerate(full.nodes):
        if node.op is None:
            continue
        ins = full.input_eids[nid]
        outs = range(full.row_ptr[nid], full.row_ptr[nid + 1])
        in_shapes = [plan.shapes[e] for e in ins]
        out_shapes = [plan.shapes[e] for e in outs]
        places = bool(node.op.views or node.op.part_offsets(in_shapes, out_shapes) is not None
                      or node.op.join_offsets(in_shapes, out_shapes) is not None)
        for e in outs:
            sid = memory.storage[e]
            if sid < 0:
                continue
            lo = memory.offset(e)
            hi = lo + entry_nbytes(plan.shapes[e], plan.dtypes[e])
            for p, (psid, plo, phi, pend) in live.items():
                if psid != sid or phi <= lo or hi <= plo or pend < nid:
                    continue
                # p is an input, or has the very bytes of one (the entry it views)
                related = p in ins or (psid, plo, phi) in {
                    (memory.storage[i], memory.offset(i),
                     memory.offset(i) + entry_nbytes(plan.shapes[i], plan.dtypes[i]))
                    for i in ins}
                assert related and (places or pend == nid), (full.entry_name(p),
                                                             full.entry_name(e))
            live[e] = (sid, lo, hi, float("inf") if e in pinned else max(last[e], nid))


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_no_two_live_entries_share_a_block(name):
    """Directly on the plan: an entry's bytes are not handed to another entry while it lives,
    except to a view of it (a reshape's output), which then keeps the block as long as either
    lives."""
    sym, shapes = GRAPHS[name]()
    reqs = normalize_grad_req("write", sym.list_arguments())
    _assert_no_live_overlap(compile_graph(sym._graph, shapes, {}, reqs))


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
    _assert_same(planned, _run(sym, shapes, reuse=False)[1])
    # fc's gradient: d/dfc sum(2 fc * fc) = 4 fc, through the views and their gradients
    x, w, b = (exe.arg_dict[k].asnumpy() for k in ("x", "fc_weight", "fc_bias"))
    np.testing.assert_allclose(planned[-1][1]["fc_weight"], (4 * (x @ w.T + b)).T @ x, rtol=1e-5)


def test_views_off_with_inplace_off():
    """CompileOptions(inplace=False) turns the views off too: every step copies."""
    sym = _views_graph()
    reqs = normalize_grad_req("write", sym.list_arguments())
    plan = compile_graph(sym._graph, {"x": (4, 3)}, {}, reqs,
                         options=mx.passes.CompileOptions(inplace=False))
    assert plan.memory.view_hits == 0


def _parts_graph():
    """fc (4, 6) split along its leading axis into four rows, each row squashed, the rows
    joined again along the leading axis."""
    fc = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=6, name="fc")
    rows = mx.sym.SliceChannel(fc, axis=0, num_outputs=4, name="rows")
    squashed = [mx.sym.Activation(rows[k], act_type="tanh", name="sq%d" % k) for k in range(4)]
    joined = mx.sym.Concat(*squashed, dim=0, name="joined")
    return mx.sym.MakeLoss(mx.sym.sum(joined * fc), name="loss"), {"x": (4, 3)}


def test_leading_axis_splits_and_joins_are_placed_in_place_and_run_nothing():
    sym, shapes = _parts_graph()
    exe, planned = _run(sym, shapes, reuse=True)
    plan, memory = exe._plan, exe._plan.memory
    graph = plan.graph
    eid = {graph.entry_name(e): e for e in range(graph.num_entries)}
    nid = {n.name: i for i, n in enumerate(graph.nodes)}
    fc = eid["fc_output"]
    for k in range(4):  # the split's rows are runs of fc's bytes, 24 bytes apart
        row = eid["rows_output%d" % k]
        assert memory.storage[row] == memory.storage[fc]
        assert memory.offset(row) == memory.offset(fc) + 24 * k
        # each squashed row was written straight into its place in the join
        assert memory.storage[eid["sq%d_output" % k]] == memory.storage[eid["joined_output"]]
        assert memory.offset(eid["sq%d_output" % k]) == memory.offset(eid["joined_output"]) + 24 * k
    idle = {graph.nodes[n].name for n in memory.idle_nodes}
    # forward, the split and the join; backward, the join's gradient (parts of its head
    # gradient) and the split's (its rows' gradients written into their places)
    assert {"rows", "joined", "joined_backward", "rows_backward"} <= idle, idle
    assert all(s.run.__name__ == "_nothing_to_do" for s in exe._steps.train
               if s.nid in (nid["rows"], nid["joined"]))
    _assert_no_live_overlap(plan)
    _assert_same(planned, _run(sym, shapes, reuse=False)[1])


def test_a_split_along_another_axis_copies():
    fc = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=6, name="fc")
    cols = mx.sym.SliceChannel(fc, axis=1, num_outputs=2, name="cols")
    sym = mx.sym.MakeLoss(mx.sym.sum(cols[0] * cols[1]))
    exe, _ = _run(sym, {"x": (4, 3)}, reuse=True)
    graph, memory = exe._plan.graph, exe._plan.memory
    assert "cols" not in {graph.nodes[n].name for n in memory.idle_nodes}
    eid = {graph.entry_name(e): e for e in range(graph.num_entries)}
    for k in range(2):
        assert memory.storage[eid["cols_output%d" % k]] != memory.storage[eid["fc_output"]]


def test_a_join_of_views_has_the_viewed_entries_written_into_it():
    """Concat along the leading axis of expand_dims(tanh(row)): each tanh writes straight
    into its place in the join, the expand_dims are views of it there, and neither the
    views nor the join copy anything."""
    fc = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=6, name="fc")
    rows = mx.sym.SliceChannel(fc, axis=0, num_outputs=4, squeeze_axis=True, name="rows")
    wide = [mx.sym.expand_dims(mx.sym.Activation(rows[k], act_type="tanh", name="sq%d" % k),
                               axis=0, name="wide%d" % k) for k in range(4)]
    joined = mx.sym.Concat(*wide, dim=0, name="joined")
    sym = mx.sym.MakeLoss(mx.sym.sum(joined * fc), name="loss")
    exe, planned = _run(sym, {"x": (4, 3)}, reuse=True)
    graph, memory = exe._plan.graph, exe._plan.memory
    eid = {graph.entry_name(e): e for e in range(graph.num_entries)}
    out = eid["joined_output"]
    for k in range(4):
        for name in ("sq%d_output" % k, "wide%d_output" % k):
            assert (memory.storage[eid[name]], memory.offset(eid[name])) == (
                memory.storage[out], memory.offset(out) + 24 * k), name
    idle = {graph.nodes[n].name for n in memory.idle_nodes}
    assert {"joined", "wide0", "wide3", "rows"} <= idle, idle
    _assert_no_live_overlap(exe._plan)
    _assert_same(planned, _run(sym, {"x": (4, 3)}, reuse=False)[1])


def test_a_join_of_views_of_variables_still_joins_in_place():
    """Pieces that are reshapes of unplanned entries (the arguments) are themselves the
    pieces: each reshape writes into its place, and the join copies nothing."""
    xs = [mx.sym.Variable("x%d" % k) for k in range(3)]
    joined = mx.sym.Concat(*[mx.sym.expand_dims(x, axis=0, name="w%d" % k)
                             for k, x in enumerate(xs)], dim=0, name="joined")
    sym = mx.sym.MakeLoss(mx.sym.sum(joined * joined))
    shapes = {"x%d" % k: (2, 3) for k in range(3)}
    exe, planned = _run(sym, shapes, reuse=True)
    graph, memory = exe._plan.graph, exe._plan.memory
    idle = {graph.nodes[n].name for n in memory.idle_nodes}
    assert "joined" in idle and "w0" not in idle  # each reshape copies into the join
    _assert_same(planned, _run(sym, shapes, reuse=False)[1])


def test_graph_outputs_never_share_bytes_through_views():
    """Two outputs of one value (CSE's copy of a repeated output, an identity of an output,
    a reshape of one) stay two arrays: writing one leaves the other as computed."""
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    y = mx.sym.elemwise_add(a, b, name="y")
    for heads in ([y, mx.sym.elemwise_add(a, b, name="again")], [y, mx.sym.identity(y)],
                  [y, mx.sym.Reshape(y, shape=(-1,))]):
        exe = mx.sym.Group(heads).simple_bind(mx.cpu(), a=(2, 2), b=(2, 2), grad_req="null")
        exe.arg_dict["a"][:] = 1
        outs = exe.forward()
        outs[0][:] = 5
        np.testing.assert_array_equal(outs[1].asnumpy().ravel(), np.ones(4))
