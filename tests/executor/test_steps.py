"""The executor's contracts (minimod/executor/steps.py, executor.py, monitoring.py): a step is a
frozen `Step` record bound once per plan; the monitor and the NaN guard wrap steps, and cost
nothing when they are off; gradient nodes are ops like the others; the group's figures come
from the plans."""
import dataclasses

import numpy as np
import pytest

import minimod as mx
from minimod.executor.batches import DeviceBatch
from minimod.executor.steps import Step
from minimod.ops.registry import Op
from minimod.passes import BackwardOp

from ..passes.graphs import CONVNET_SHAPES, convnet, mlp


def _bound_mlp():
    sym, shapes = mlp()
    exe = sym.simple_bind(mx.cpu(), **shapes)
    for arr in exe.arg_arrays:
        arr[:] = np.random.RandomState(0).uniform(-1, 1, arr.shape)
    return exe


def test_steps_are_frozen_records_over_the_planned_arrays():
    exe = _bound_mlp()
    steps = exe._steps
    assert steps.train == steps.forward + steps.backward
    assert all(isinstance(s, Step) for s in steps.train)
    assert [s.forward for s in steps.train] == [True] * 6 + [False] * (len(steps.train) - 6)
    first = steps.forward[0]
    assert first.node.name == "fc1" and first.nid == exe._plan.graph.nodes.index(first.node)
    assert first.inputs[0] is exe.arg_dict["data"]._data  # the user's array, not a copy
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.run = None


def test_the_monitor_and_the_guard_wrap_steps_only_while_they_are_on():
    exe = _bound_mlp()
    assert exe._step_lists() is exe._steps  # off: the bound steps themselves
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append(name))
    watched = exe._step_lists()
    assert watched is not exe._steps and watched is exe._step_lists()  # made once
    assert [s.node for s in watched.train] == [s.node for s in exe._steps.train]
    exe.forward(is_train=True)
    assert seen[:2] == ["fc1_output", "relu1_output"]
    exe.set_monitor_callback(None)
    assert exe._step_lists() is exe._steps
    with mx.numerics.nan_guard():
        guarded = exe._step_lists()
        assert guarded is not exe._steps
        exe.forward()
    assert exe._step_lists() is exe._steps


def test_the_guard_reports_its_own_node_without_the_loops_prefix():
    exe = _bound_mlp()
    exe.arg_dict["fc2_weight"][:] = np.nan
    with mx.numerics.nan_guard(), pytest.raises(mx.base.NonFiniteError) as info:
        exe.forward()
    assert str(info.value).startswith("NaN guard: argument 'fc2_weight'")


def test_gradient_nodes_are_ops_with_the_hooks_the_executor_reads():
    exe = _bound_mlp()
    bwd = [s.node.op for s in exe._steps.backward]
    assert bwd and all(isinstance(op, BackwardOp) and isinstance(op, Op) for op in bwd)
    assert all(op.is_backward for op in bwd)
    fwd = exe._steps.forward[0].node.op
    assert not fwd.is_backward and fwd.layout_note() in ("", " [batch-last out]")
    ins, outs = [np.zeros(2)], [np.ones(2)]
    assert Op.as_written(fwd, np, ins, outs) == (ins, outs)
    assert Op.unfused_nodes(fwd, np, "fc1", ins, outs) == [("fc1", fwd, ins, outs)]


def test_the_group_reads_the_planned_bytes_from_the_plans():
    big = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2000, name="fc")
    big = mx.sym.LinearRegressionOutput(big, name="out")
    mod = mx.mod.Module(big, label_names=("out_label",), context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[("data", (2000, 2000))], label_shapes=[("out_label", (2000, 2000))])
    per_exec = [exe._plan.memory.planned_bytes >> 20 for exe in mod._exec_group.execs]
    assert mod._total_exec_bytes == sum(per_exec) > 0
    assert [int(exe.debug_str().split("\n")[-3].split()[1])
            for exe in mod._exec_group.execs] == per_exec


def test_a_batch_is_told_apart_from_a_per_device_list_once():
    data = [mx.nd.ones((4, 3)), mx.nd.ones((4, 5))]
    one = mx.io.DataBatch(data=data, label=[mx.nd.zeros((4,))],
                          provide_data=[("a", (4, 3)), ("b", (4, 5))])
    single = DeviceBatch.of(one)
    assert not single.pre_sliced and DeviceBatch.of(single) is single
    assert single.data_shapes() == [(4, 3), (4, 5)]
    assert single.provided("provide_data") == one.provide_data
    assert single.metric_labels() is one.label
    sliced = DeviceBatch.of([one, one])
    assert sliced.pre_sliced and sliced.first is one
    assert sliced.data_shapes() == [(8, 3), (8, 5)]
    assert sliced.provided("provide_data") is None
    assert sliced.metric_labels() == [one.label, one.label]
    assert len(sliced.sources("data")) == 2 and len(sliced.sources("data")[0]) == 2


def test_modules_decide_their_capabilities_once_per_class():
    class Plain(mx.mod.Module):
        pass

    class OwnForward(mx.mod.Module):
        def forward(self, data_batch, is_train=None):
            super().forward(data_batch, is_train)

    class OwnParams(mx.mod.Module):
        def get_params(self):
            return super().get_params()

    assert mx.mod.Module._own_forward_backward and mx.mod.Module._own_param_methods
    assert Plain._own_forward_backward and Plain._own_param_methods
    assert not OwnForward._own_forward_backward and OwnForward._own_param_methods
    assert OwnParams._own_forward_backward and not OwnParams._own_param_methods


def test_a_loaded_graph_finds_the_custom_op_registered():
    # `import minimod` registers Custom (minimod.operator), so a graph naming an op_type
    # nobody registered is refused for that reason, not as an unknown operator
    node = ('{"op": "Custom", "name": "c", "attrs": {"op_type": "never_registered"}, '
            '"inputs": [[0, 0, 0]]}')
    graph = ('{"nodes": [{"op": "null", "name": "x", "inputs": []}, %s], "arg_nodes": [0], '
             '"node_row_ptr": [0, 1, 2], "heads": [[1, 0, 0]], '
             '"attrs": {"mxnet_version": ["int", 10901]}}' % node)
    with pytest.raises(mx.MXNetError, match="op_type 'never_registered' is not registered"):
        mx.sym.load_json(graph)


def test_convnet_steps_stand_for_the_nodes_the_user_wrote_in_the_monitor():
    exe = convnet().simple_bind(mx.cpu(), **CONVNET_SHAPES)
    fused = [s for s in exe._steps.forward if s.node.op.name == "Activation+Pooling"]
    assert fused
    parts = fused[0].node.op.unfused_nodes(np, fused[0].node.name, list(fused[0].inputs),
                                           list(fused[0].outputs))
    assert [name for name, *_ in parts] == ["act1", "pool1"]
