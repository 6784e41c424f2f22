"""The compiler states what it did (minimod/passes/options.py, compiler.py): the rewrites are
an explicit, ordered argument, the plan records which ran, `debug_str` lists them, and shapes
are inferred again only where a rewrite changed the graph."""
import dataclasses

import pytest

import minimod as mx
from minimod.passes import (
    BATCH_LAST,
    CSE,
    DEVICE,
    FUSE,
    REWRITES,
    STACK,
    CompileOptions,
    compile_graph,
    compiler,
    default_options,
    fusion,
    layouts,
    stacking,
)

from .graphs import CONVNET_SHAPES, convnet, mlp


def _op_names(plan):
    return [n.op.name for n in plan.graph.nodes[:plan.num_forward_nodes] if n.op is not None]


def test_the_options_are_a_frozen_record_with_every_rewrite_by_default():
    options = CompileOptions()
    assert [r.name for r in options.rewrites] == ["cse", "device", "fuse", "stack_steps",
                                                  "batch_last"]
    assert options.rewrites == REWRITES == (CSE, DEVICE, FUSE, STACK, BATCH_LAST)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.inplace = False
    assert [r.name for r in options.without("fuse", "cse").rewrites] == [
        "device", "stack_steps", "batch_last"]


def test_the_plan_records_the_rewrites_that_ran_and_which_changed_the_graph():
    graph = convnet()._graph
    plan = compile_graph(graph, CONVNET_SHAPES, {}, {}, CompileOptions(), ctx=mx.cpu())
    assert plan.rewrites == (("cse", False), ("device", False), ("fuse", True),
                             ("stack_steps", False), ("batch_last", True),
                             ("stack_grads", False), ("reader_bias", False),
                             ("fuse_grads", False))
    assert "Activation+Pooling" in _op_names(plan)
    assert plan.options == CompileOptions()
    # no rewrite: the graph runs as written
    bare = compile_graph(graph, CONVNET_SHAPES, {}, {}, CompileOptions(rewrites=()))
    assert bare.rewrites == ()
    assert len(bare.graph.nodes) == len(graph.nodes)
    assert "Activation+Pooling" not in _op_names(bare)


def test_rewrites_run_in_the_order_given():
    graph = convnet()._graph
    plan = compile_graph(graph, CONVNET_SHAPES, {}, {}, CompileOptions(rewrites=(BATCH_LAST,
                                                                                  FUSE)))
    # and the rewrites of the graph with its gradient nodes that come with the fusion
    assert [name for name, _ in plan.rewrites] == ["batch_last", "fuse", "reader_bias",
                                                   "fuse_grads"]
    ordered = compile_graph(graph, CONVNET_SHAPES, {}, {}, CompileOptions(rewrites=(FUSE,
                                                                                     BATCH_LAST)))
    assert [name for name, _ in ordered.rewrites][:2] == ["fuse", "batch_last"]
    # laid out first, the Activations still sat between the convolutions and their pooling
    # (nothing batch-last there), so only the fusion changed the graph
    assert plan.rewrites[:2] == (("batch_last", False), ("fuse", True))
    assert ordered.rewrites[:2] == (("fuse", True), ("batch_last", True))
    assert _op_names(plan) == _op_names(ordered)


def test_shapes_are_inferred_again_only_after_a_rewrite_changed_the_graph(monkeypatch):
    calls = []
    real = compiler.infer_graph_shapes

    def counted(graph, shapes):
        calls.append(len(graph.nodes))
        return real(graph, shapes)
    monkeypatch.setattr(compiler, "infer_graph_shapes", counted)
    sym, shapes = mlp()
    plan = compile_graph(sym._graph, shapes, {}, {}, CompileOptions().without("batch_last"))
    assert not any(changed for _, changed in plan.rewrites)
    assert len(calls) == 1  # no rewrite changed the MLP: one sweep
    calls.clear()
    compile_graph(convnet()._graph, CONVNET_SHAPES, {}, {}, CompileOptions())
    # once before the fusion, which reads them; once after it, for the layout pass; once
    # after the layout pass, for the gradient and the memory plan
    assert len(calls) == 3


def test_debug_str_lists_the_rewrites_and_the_graph_that_runs():
    exe = convnet().simple_bind(mx.cpu(), **CONVNET_SHAPES)
    lines = exe.debug_str().split("\n")
    assert lines[1] == ("Rewrites: cse (no change), device (no change), fuse, stack_steps (no "
                        "change), batch_last, stack_grads (no change), reader_bias (no change), "
                        "fuse_grads (no change)")
    assert any(line.startswith("[fwd] pool1 (Activation+Pooling") for line in lines)
    assert not any(line.startswith("[fwd] act1 ") for line in lines)
    with fusion(False), layouts(False):
        plain = convnet().simple_bind(mx.cpu(), **CONVNET_SHAPES)
    assert plain.debug_str().split("\n")[1] == "Rewrites: cse (no change), device (no change)"


def test_default_options_read_the_switches_and_mxnets_environment_variable(monkeypatch):
    names = lambda: [r.name for r in default_options().rewrites]  # noqa: E731
    assert names() == ["cse", "device", "fuse", "stack_steps", "batch_last"]
    with fusion(False):  # the fusion pass and the step stacking
        assert names() == ["cse", "device", "batch_last"]
        with layouts(False):
            assert names() == ["cse", "device"]
        assert names() == ["cse", "device", "batch_last"]
    with stacking(False):
        assert names() == ["cse", "device", "fuse", "batch_last"]
    assert names() == ["cse", "device", "fuse", "stack_steps", "batch_last"]  # came back
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", "0")
    assert names() == ["device", "fuse", "stack_steps", "batch_last"]
    assert default_options(reuse_memory=False).reuse_memory is False


def test_a_reshaped_executor_compiles_with_the_options_of_its_plan():
    sym = convnet()
    with fusion(False):
        exe = sym.simple_bind(mx.cpu(), **CONVNET_SHAPES)
    shapes = dict(CONVNET_SHAPES, data=(2,) + CONVNET_SHAPES["data"][1:], softmax_label=(2,))
    new = exe.reshape(**shapes)
    assert new._plan.options == exe._plan.options
    assert "fuse" not in [name for name, _ in new._plan.rewrites]
