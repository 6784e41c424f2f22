"""Model parallelism (`group2ctx`, passes/placement.py): nodes made in
`AttrScope(ctx_group=...)` run on their group's device, copy nodes cross between devices forward
and back, and every argument, gradient, aux state and output lives where the groups say. CPU
contexts are separate devices here (cpu(1)'s arrays are not cpu(0)'s), so the placement is
observable and every copy a real one; the arithmetic is the ungrouped net's, so results agree
bit for bit. Module-level training (data parallel on top, kvstores, buckets) is in
tests/module/test_group2ctx_module.py."""
import numpy as np
import pytest

import minimod as mx
from minimod.base import BindError

G2C = {"dev1": mx.cpu(1), "dev2": mx.cpu(2)}


def two_group_mlp(batchnorm=True):
    """data -> fc1 -> relu [-> BatchNorm] (group dev1) -> fc2 -> tanh -> fc3 -> softmax (dev2)."""
    with mx.name.NameManager():
        data = mx.sym.Variable("data")
        with mx.AttrScope(ctx_group="dev1"):
            net = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
            net = mx.sym.Activation(net, act_type="relu", name="relu1")
            if batchnorm:
                net = mx.sym.BatchNorm(net, name="bn1")
        with mx.AttrScope(ctx_group="dev2"):
            net = mx.sym.FullyConnected(net, num_hidden=6, name="fc2")
            net = mx.sym.Activation(net, act_type="tanh", name="tanh2")
            net = mx.sym.FullyConnected(net, num_hidden=3, name="fc3")
            return mx.sym.SoftmaxOutput(net, name="softmax")


def _values(exe, seed=0):
    rng = np.random.RandomState(seed)
    for name, arr in exe.arg_dict.items():
        if name == "softmax_label":
            arr[:] = rng.randint(0, 3, arr.shape)
        else:
            arr[:] = rng.uniform(-1, 1, arr.shape).astype(np.float32)


def _bound_pair(sym, group2ctx=G2C, **shapes):
    shapes = shapes or {"data": (5, 7)}
    placed = sym.simple_bind(mx.cpu(0), group2ctx=group2ctx, **shapes)
    plain = sym.simple_bind(mx.cpu(0), **shapes)
    _values(placed)
    _values(plain)
    return placed, plain


def _run(exe, steps=1):
    for _ in range(steps):
        exe.forward(is_train=True)
        exe.backward()


# ---------------------------------------------------------------- where the arrays live

def test_arrays_live_where_their_groups_say():
    exe = two_group_mlp().simple_bind(mx.cpu(0), data=(5, 7), group2ctx=G2C)
    where = {name: str(arr.context) for name, arr in exe.arg_dict.items()}
    assert where == {"data": "cpu(0)", "fc1_weight": "cpu(1)", "fc1_bias": "cpu(1)",
                     "bn1_gamma": "cpu(1)", "bn1_beta": "cpu(1)", "fc2_weight": "cpu(2)",
                     "fc2_bias": "cpu(2)", "fc3_weight": "cpu(2)", "fc3_bias": "cpu(2)",
                     "softmax_label": "cpu(2)"}
    for name, grad in exe.grad_dict.items():
        assert grad.context == exe.arg_dict[name].context, name
    assert {n: str(a.context) for n, a in exe.aux_dict.items()} == {
        "bn1_moving_mean": "cpu(1)", "bn1_moving_var": "cpu(1)"}
    _run(exe)
    assert exe.outputs[0].context == mx.cpu(2)  # on the device of the node producing it
    # separate devices hold separate memory: no parameter shares a buffer across devices
    fc1, fc2 = exe.arg_dict["fc1_weight"]._data, exe.arg_dict["fc2_weight"]._data
    assert not np.shares_memory(fc1, fc2)


def test_every_value_lives_on_its_nodes_device_and_blocks_never_mix():
    exe = two_group_mlp().simple_bind(mx.cpu(0), data=(5, 7), group2ctx=G2C)
    plan = exe._plan
    graph = plan.graph
    for nid, node in enumerate(graph.nodes):
        if node.op is None or node.op.name.endswith("_CrossDeviceCopy"):
            continue
        here = plan.devices[graph.row_ptr[nid]]
        # a node reads only values of its own device: copies carry the others over
        assert all(plan.devices[e] == here for e in graph.input_eids[nid]), node.name
    memory = plan.memory
    for eid, sid in enumerate(memory.storage):
        if sid >= 0:
            assert memory.block_devices[sid] == plan.devices[eid], graph.entry_name(eid)
    assert set(exe._pool.block_contexts) == {mx.cpu(1), mx.cpu(2)}


def test_a_copy_goes_each_way_on_every_crossing():
    """As in MXNet: a copy per value and target device, shared by the forward and the gradient
    nodes that read it there, named after its source; and a gradient computed away from its
    variable is copied back to it."""
    exe = two_group_mlp().simple_bind(mx.cpu(0), data=(5, 7), group2ctx=G2C)
    graph = exe._plan.graph
    copies = {n.name: [graph.nodes[graph.entry_node(e)].name for e in graph.input_eids[i]]
              for i, n in enumerate(graph.nodes) if n.op is not None and n.op.name ==
              "_CrossDeviceCopy"}
    assert copies == {"data_0_copy": ["data"],                 # cpu(0) -> cpu(1)
                      "bn1_0_copy": ["bn1"],                   # cpu(1) -> cpu(2)
                      "fc2_backward_0_copy": ["fc2_backward"],  # its gradient, back
                      "fc1_backward_0_copy": ["fc1_backward"]}  # data's gradient, to cpu(0)
    readers = [n.name for n in graph.nodes if any(e.node.name == "bn1_0_copy" for e in n.inputs)]
    assert readers == ["fc2", "fc2_backward"]
    # without data's gradient, nothing goes back to cpu(0)
    exe = two_group_mlp().simple_bind(mx.cpu(0), data=(5, 7), group2ctx=G2C,
                                      grad_req={"data": "null"})
    assert not any(n.name == "fc1_backward_0_copy" for n in exe._plan.graph.nodes)


def test_one_copy_per_value_and_device_and_sums_in_the_ungrouped_order():
    """w is read by three nodes on another device: one copy takes it there, and its gradient
    is the ungrouped graph's sum of the three contributions, in the same order (so the same
    bits), then copied back to w."""
    with mx.name.NameManager():
        x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
        with mx.AttrScope(ctx_group="dev2"):
            h = x
            for i in range(3):
                h = mx.sym.tanh(h * w, name="t%d" % i)
            loss = mx.sym.MakeLoss(mx.sym.sum(h, name="s"), name="loss")
    placed = loss.simple_bind(mx.cpu(0), x=(4, 5), w=(4, 5), group2ctx=G2C)
    plain = loss.simple_bind(mx.cpu(0), x=(4, 5), w=(4, 5))
    for e in (placed, plain):
        _values(e, seed=5)
        _run(e)
    names = [n.name for n in placed._plan.graph.nodes]
    assert names.count("w_0_copy") == 1 and "w_grad_sum_0_copy" in names
    assert placed.grad_dict["w"].context == mx.cpu(0)
    np.testing.assert_array_equal(placed.grad_dict["w"].asnumpy(),
                                  plain.grad_dict["w"].asnumpy())


# ---------------------------------------------------------------- same numbers

def test_forward_backward_equal_the_ungrouped_net_bit_for_bit():
    placed, plain = _bound_pair(two_group_mlp())
    _run(placed, steps=2)
    _run(plain, steps=2)
    np.testing.assert_array_equal(placed.outputs[0].asnumpy(), plain.outputs[0].asnumpy())
    for name in plain.grad_dict:
        np.testing.assert_array_equal(placed.grad_dict[name].asnumpy(),
                                      plain.grad_dict[name].asnumpy(), err_msg=name)
    for name in plain.aux_dict:
        np.testing.assert_array_equal(placed.aux_dict[name].asnumpy(),
                                      plain.aux_dict[name].asnumpy(), err_msg=name)


def test_bind_keeps_arrays_where_they_are_and_gradients_flow_back():
    """bind: each array lives where the user put it; a variable of no group feeding a grouped
    node gets its gradient copied back to it (MXNet refuses that bind)."""
    sym = two_group_mlp(batchnorm=False)
    shapes = dict(zip(sym.list_arguments(), sym.infer_shape(data=(4, 7))[0]))
    rng = np.random.RandomState(3)
    values = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in shapes.items()}
    values["softmax_label"] = rng.randint(0, 3, shapes["softmax_label"]).astype(np.float32)
    homes = {n: (mx.cpu(3) if n.startswith("fc1") else mx.cpu(0)) for n in shapes}
    args = {n: mx.nd.array(v, ctx=homes[n]) for n, v in values.items()}
    grads = {n: mx.nd.zeros(s, ctx=homes[n]) for n, s in shapes.items()}
    exe = sym.bind(mx.cpu(0), args=args, args_grad=grads, group2ctx=G2C)
    ref = sym.bind(mx.cpu(0), args={n: mx.nd.array(v) for n, v in values.items()},
                   args_grad={n: mx.nd.zeros(s) for n, s in shapes.items()})
    for e in (exe, ref):
        _run(e)
    assert exe.arg_dict["fc1_weight"].context == mx.cpu(3)
    assert exe.outputs[0].context == mx.cpu(2)
    for name in shapes:
        assert exe.grad_dict[name].context == homes[name]
        np.testing.assert_array_equal(grads[name].asnumpy(), ref.grad_dict[name].asnumpy(),
                                      err_msg=name)


def test_grad_req_add_and_a_variable_read_on_two_devices():
    """x feeds a node of each group: its two gradient contributions come back over two copies
    and are summed on x's device; 'add' accumulates there."""
    with mx.name.NameManager():
        x = mx.sym.Variable("x")
        with mx.AttrScope(ctx_group="dev1"):
            a = mx.sym.sin(x, name="a")
        with mx.AttrScope(ctx_group="dev2"):
            b = mx.sym.cos(x, name="b")
            loss = mx.sym.MakeLoss(mx.sym.sum(a * b, name="s"), name="loss")
    placed = loss.simple_bind(mx.cpu(0), x=(3, 4), grad_req="add", group2ctx=G2C)
    plain = loss.simple_bind(mx.cpu(0), x=(3, 4), grad_req="add")
    for e in (placed, plain):
        e.arg_dict["x"][:] = np.linspace(-1, 1, 12).reshape(3, 4)
        _run(e, steps=2)
    assert placed.grad_dict["x"].context == mx.cpu(0)
    np.testing.assert_array_equal(placed.grad_dict["x"].asnumpy(),
                                  plain.grad_dict["x"].asnumpy())


def test_placement_follows_mxnets_rules_for_nodes_of_no_group():
    """An op of no group runs where its first input lives; an aux state lives with the node
    that updates it; an input-less op where its reader runs."""
    with mx.name.NameManager():
        data = mx.sym.Variable("data")
        with mx.AttrScope(ctx_group="dev2"):
            h = mx.sym.FullyConnected(data, num_hidden=4, name="fc1")
        h = mx.sym.Activation(h, act_type="relu", name="free")      # no group
        h = mx.sym.BatchNorm(h, name="bn")                           # no group either
        ones = mx.sym.ones((3, 4), name="ones")                       # no group, no input
        with mx.AttrScope(ctx_group="dev1"):
            h = mx.sym.elemwise_add(h, ones, name="plus")
        out = mx.sym.MakeLoss(mx.sym.sum(h, name="s"), name="loss")
    exe = out.simple_bind(mx.cpu(0), data=(3, 5), group2ctx=G2C)
    plan, graph = exe._plan, exe._plan.graph
    device = {n.name: plan.devices[graph.row_ptr[i]] for i, n in enumerate(graph.nodes)}
    assert device["free"] == device["bn"] == mx.cpu(2)
    assert exe.aux_dict["bn_moving_mean"].context == mx.cpu(2)
    assert device["plus"] == device["ones"] == device["s"] == device["loss"] == mx.cpu(1)
    _run(exe)


def test_reshape_keeps_the_placement():
    exe = two_group_mlp().simple_bind(mx.cpu(0), data=(5, 7), group2ctx=G2C)
    small = exe.reshape(data=(2, 7), softmax_label=(2,))
    assert small._plan.devices is not None
    assert small.arg_dict["data"].context == mx.cpu(0)
    assert small.arg_dict["softmax_label"].context == mx.cpu(2)
    _values(small)
    _run(small)
    assert small.outputs[0].shape == (2, 3) and small.outputs[0].context == mx.cpu(2)
    bigger = exe.reshape(allow_up_sizing=True, data=(9, 7), softmax_label=(9,))
    assert bigger.arg_dict["softmax_label"].context == mx.cpu(2)


# ---------------------------------------------------------------- when it does not apply

@pytest.mark.parametrize("group2ctx", [None, {}, {"dev1": mx.cpu(0), "dev2": mx.cpu(0)}],
                         ids=["none", "empty", "all-default"])
def test_no_placement_means_the_one_device_plan(group2ctx):
    """Nothing to place (MXNet too ignores an empty group2ctx): the plan is the ungrouped one,
    the same steps and blocks, every array on the bind's context."""
    sym = two_group_mlp()
    exe = sym.simple_bind(mx.cpu(0), data=(5, 7), group2ctx=group2ctx)
    plain = sym.simple_bind(mx.cpu(0), data=(5, 7))
    assert exe._plan.devices is None and exe._plan.placement is None
    assert exe._plan.memory == plain._plan.memory
    assert exe.debug_str() == plain.debug_str()
    assert all(a.context == mx.cpu(0) for a in exe.arg_dict.values())


def test_without_group2ctx_every_array_must_be_on_the_binds_context():
    """MXNet 1.9.1 refuses such a bind ("All arguments must be in global context (cpu(0))
    unless group2ctx is specified"), for arguments and gradient arrays; it does not check aux
    states, and neither do we for another CPU id."""
    x = mx.sym.Variable("x")
    with pytest.raises(BindError, match="argument 'x' is on cpu\\(1\\) but the executor binds "
                                        "on cpu\\(0\\)"):
        (x * 2).bind(mx.cpu(0), {"x": mx.nd.ones((2,), ctx=mx.cpu(1))})
    with pytest.raises(BindError, match="gradient array for 'x' is on cpu\\(1\\)"):
        (x * 2).bind(mx.cpu(0), {"x": mx.nd.ones((2,))},
                     args_grad={"x": mx.nd.zeros((2,), ctx=mx.cpu(1))})
    (x * 2).bind(mx.cpu(0), {"x": mx.nd.ones((2,))},  # a 'null' gradient is never written
                 args_grad={"x": mx.nd.zeros((2,), ctx=mx.cpu(1))}, grad_req="null")
    bn = mx.sym.BatchNorm(mx.sym.Variable("a"), name="bn")
    exe = bn.bind(mx.cpu(0), {"a": mx.nd.ones((2, 3)), "bn_gamma": mx.nd.ones((3,)),
                              "bn_beta": mx.nd.ones((3,))},
                  aux_states={"bn_moving_mean": mx.nd.zeros((3,), ctx=mx.cpu(1)),
                              "bn_moving_var": mx.nd.ones((3,))})
    assert exe.forward()[0].shape == (2, 3)


def test_a_group2ctx_on_the_default_still_places_arrays_bound_elsewhere():
    """A group2ctx that puts every group on the bind's context, with an array bound on another
    device: that variable lives there and its readers get a copy (MXNet's assignment path)."""
    sym = two_group_mlp()
    arg_shapes, _, aux_shapes = sym.infer_shape(data=(5, 7))
    shapes = dict(zip(sym.list_arguments(), arg_shapes))
    rng = np.random.RandomState(0)
    values = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in shapes.items()}
    aux = lambda: {n: mx.nd.ones(s) for n, s in zip(sym.list_auxiliary_states(),  # noqa: E731
                                                     aux_shapes)}
    args = {n: mx.nd.array(v) for n, v in values.items()}
    args["data"] = mx.nd.array(values["data"], ctx=mx.cpu(1))
    exe = sym.bind(mx.cpu(0), args=args, aux_states=aux(),
                   group2ctx={"dev1": mx.cpu(0), "dev2": mx.cpu(0)})
    ref = sym.bind(mx.cpu(0), args={n: mx.nd.array(v) for n, v in values.items()},
                   aux_states=aux())
    assert exe._plan.placement is not None and "_copy" in exe.debug_str()
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), ref.forward()[0].asnumpy())


def test_groups_no_node_uses_are_ignored():
    g2c = dict(G2C, unused=mx.gpu(7))  # not even a device this machine has
    exe = two_group_mlp().simple_bind(mx.cpu(0), data=(5, 7), group2ctx=g2c)
    assert "unused" not in exe.debug_str()


# ---------------------------------------------------------------- errors at bind

def test_a_group_missing_from_group2ctx_is_an_error_naming_it():
    with pytest.raises(BindError, match=r"ctx_group 'dev2' \(nodes fc2_weight, fc2_bias, fc2, "
                                        r"tanh2\) has no context in group2ctx, which names dev1"):
        two_group_mlp().simple_bind(mx.cpu(0), data=(5, 7), group2ctx={"dev1": mx.cpu(1)})


def test_a_context_this_machine_lacks_is_an_error_naming_group_and_context():
    with pytest.raises(BindError, match=r"group2ctx puts ctx_group 'dev2' on gpu\(7\), which "
                                        r"this machine cannot use"):
        two_group_mlp().simple_bind(mx.cpu(0), data=(5, 7),
                                    group2ctx={"dev1": mx.cpu(1), "dev2": mx.gpu(7)})


@pytest.mark.parametrize("bad", [[mx.cpu(1)], {"dev1": "cpu(1)", "dev2": mx.cpu(2)},
                                 {1: mx.cpu(1)}], ids=["list", "str-context", "int-key"])
def test_group2ctx_that_is_not_a_dict_of_contexts_is_an_error(bad):
    with pytest.raises(BindError, match=r"group2ctx must be a dict \{ctx_group name: Context\}"):
        two_group_mlp().simple_bind(mx.cpu(0), data=(5, 7), group2ctx=bad)


def test_bind_refuses_a_gradient_array_away_from_its_argument():
    sym = two_group_mlp(batchnorm=False)
    shapes = dict(zip(sym.list_arguments(), sym.infer_shape(data=(4, 7))[0]))
    args = {n: mx.nd.zeros(s) for n, s in shapes.items()}
    grads = {n: mx.nd.zeros(s, ctx=mx.cpu(1) if n == "fc2_bias" else mx.cpu(0))
             for n, s in shapes.items()}
    with pytest.raises(BindError, match=r"gradient array for 'fc2_bias' is on cpu\(1\) but "
                                        r"the argument is on cpu\(0\)"):
        sym.bind(mx.cpu(0), args=args, args_grad=grads, group2ctx=G2C)


def test_bind_refuses_an_aux_state_away_from_its_node():
    with mx.name.NameManager():
        with mx.AttrScope(ctx_group="dev1"):
            out = mx.sym.BatchNorm(mx.sym.Variable("data"), name="bn")
    aux = {"bn_moving_mean": mx.nd.zeros((3,), ctx=mx.cpu(0)),
           "bn_moving_var": mx.nd.ones((3,), ctx=mx.cpu(1))}
    args = {"data": mx.nd.zeros((2, 3)), "bn_gamma": mx.nd.ones((3,)), "bn_beta": mx.nd.zeros(3)}
    with pytest.raises(BindError, match=r"bn \(BatchNorm\) runs on cpu\(1\) but its aux state "
                                        r"'bn_moving_mean' is bound on cpu\(0\)"):
        out.bind(mx.cpu(0), args=args, aux_states=aux, group2ctx={"dev1": mx.cpu(1)})


# ---------------------------------------------------------------- the listing

def test_debug_str_shows_the_placement_and_the_copies():
    exe = two_group_mlp().simple_bind(mx.cpu(0), data=(5, 7), group2ctx=G2C)
    text = exe.debug_str()
    lines = text.splitlines()
    assert lines[2] == ("Placement: dev1 -> cpu(1), dev2 -> cpu(2), others -> cpu(0); "
                        "copies: 2 forward, 2 back")
    assert "[fwd] data_0_copy (_CrossDeviceCopy cpu(0) -> cpu(1)): data(5,7)@ext" in text
    assert any(line.startswith("[fwd] bn1_0_copy (_CrossDeviceCopy cpu(1) -> cpu(2))")
               and line.endswith("on cpu(2)") for line in lines)
    assert any(line.startswith("[bwd] fc2_backward_0_copy (_CrossDeviceCopy cpu(2) -> "
                               "cpu(1))") and line.endswith("on cpu(1)") for line in lines)
    assert any(line.startswith("[fwd] fc1 (") and line.endswith("on cpu(1)") for line in lines)
    assert any(line.startswith("Planned on cpu(1): ") for line in lines)
    assert text.split("\n")[-3].endswith(" MB allocated")  # where MXNet's group reads it


def test_monitor_and_nan_guard_see_each_value_on_its_device():
    exe = two_group_mlp().simple_bind(mx.cpu(0), data=(5, 7), group2ctx=G2C)
    _values(exe)
    seen = {}
    exe.set_monitor_callback(lambda name, arr: seen.setdefault(name, arr.context))
    _run(exe)
    assert seen["fc1_output"] == mx.cpu(1) and seen["fc3_output"] == mx.cpu(2)
    assert seen["bn1_0_copy_output"] == mx.cpu(2)            # the copy's output: after it
    assert seen["fc2_backward_0_copy_output0"] == mx.cpu(1)  # a gradient going back
    exe.set_monitor_callback(None)
    exe.arg_dict["fc3_weight"][:] = np.nan
    with mx.numerics.nan_guard(), pytest.raises(mx.base.NonFiniteError,
                                                match=r"'fc3_weight' .* on cpu\(2\)"):
        exe.forward(is_train=True)
