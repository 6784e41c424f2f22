"""Flat parameter buffers: the fused update (`minimod.flat`) equals MXNet's per-parameter
update bit for bit.

Every executor a Module binds keeps its parameters and gradients in one flat buffer per dtype
(`FlatParams`), and Module.update runs the optimizer once per run of equal hyperparameters over
the whole buffer (and a kvstore sums each buffer once). These tests train the same model twice,
once with that path switched off (Module then takes `_update_params_on_kvstore` or
`_update_params`), and compare every parameter and optimizer state exactly.
"""
import dataclasses

import numpy as np
import pytest

import minimod as mx
from minimod import flat as fast
from minimod.executor.flat_params import FlatParams

OPTIMIZERS = [
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}),
    ("sgd", {"learning_rate": 0.1, "clip_gradient": 0.05}),
    ("nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}),
    ("adam", {"learning_rate": 0.01, "wd": 1e-3, "clip_gradient": 0.5}),
    ("rmsprop", {"learning_rate": 0.01, "centered": True, "wd": 1e-3}),
    ("adagrad", {"learning_rate": 0.1, "wd": 1e-3}),
    ("adadelta", {"wd": 1e-3}),
    ("adamax", {"learning_rate": 0.01}),
    ("signum", {"learning_rate": 0.01, "wd_lh": 1e-3}),
    ("ftrl", {"learning_rate": 0.1}),
    ("ftml", {"learning_rate": 0.01, "wd": 1e-3}),
    ("dcasgd", {"learning_rate": 0.1, "wd": 1e-3}),
    ("nadam", {"learning_rate": 0.01}),  # not flat-capable: must fall back, same numbers
    ("sgld", {"learning_rate": 0.01}),  # likewise
    ("lamb", {"learning_rate": 0.01, "wd": 1e-3}),  # likewise
    ("lars", {"learning_rate": 0.1, "momentum": 0.9, "eta": 0.01}),  # likewise
]
# Nadam's schedule moves with every per-parameter call, SGLD's noise would be drawn in other
# portions, LAMB's and LARS's trust ratios take per-parameter norms: Module keeps their
# per-key path
PER_KEY = {"nadam", "sgld", "lamb", "lars"}


def _symbol():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=5, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _batches(n=4, batch=12):
    rng = np.random.RandomState(3)
    return [mx.io.DataBatch(data=[mx.nd.array(rng.uniform(-1, 1, (batch, 7)))],
                            label=[mx.nd.array(rng.randint(0, 5, (batch,)))]) for _ in range(n)]


def _switch(monkeypatch, flat):
    """Without `flat`, switch the fast path off (until monkeypatch.undo()); with it, record
    whether each update took it. Returns the record."""
    calls = []
    if not flat:
        monkeypatch.setattr(fast, "update_params", lambda *args: False)
        return calls
    real = fast.update_params

    def spy(*args):
        calls.append(real(*args))
        return calls[-1]
    monkeypatch.setattr(fast, "update_params", spy)
    return calls


def _states(mod) -> dict:
    """The module's optimizer states by parameter name, as NumPy arrays (None for none)."""
    updater, idx2name, _ = mod._state_updater_and_keys()

    def host(state):
        if isinstance(state, (tuple, list)):
            return tuple(host(s) for s in state)
        return None if state is None else state.asnumpy()
    return {name: host(state) for name, state in updater.states_by_name(idx2name).items()}


def _assert_states_equal(a, b, where=""):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), where
        for x, y in zip(a, b):
            _assert_states_equal(x, y, where)
        return
    assert (a is None) == (b is None), where
    if a is not None:
        assert np.array_equal(a, b), where


def _train(monkeypatch, flat, name, params, contexts, kvstore, lr_mult=None):
    mx.random.seed(11)
    mod = mx.mod.Module(_symbol(), context=contexts)
    mod.bind(data_shapes=[("data", (12, 7))], label_shapes=[("softmax_label", (12,))])
    mod.init_params(initializer=mx.init.Xavier(magnitude=2.0))
    mod.init_optimizer(kvstore=kvstore, optimizer=name, optimizer_params=dict(params))
    if lr_mult:
        optim = mod._kvstore.updater.optimizer if mod._update_on_kvstore else mod._optimizer
        optim.set_lr_mult(lr_mult)
    calls = _switch(monkeypatch, flat)
    for batch in _batches() * 2:
        mod.forward_backward(batch)
        mod.update()
    monkeypatch.undo()
    arg, aux = mod.get_params()
    return {k: v.asnumpy() for k, v in arg.items()}, calls, _states(mod)


@pytest.mark.parametrize("name,params", OPTIMIZERS, ids=[o[0] + str(i)
                                                        for i, o in enumerate(OPTIMIZERS)])
def test_flat_update_equals_per_parameter_update(monkeypatch, name, params):
    flat, calls, flat_states = _train(monkeypatch, True, name, params, [mx.cpu()], None,
                                      lr_mult={"fc2_weight": 0.5})
    plain, _, plain_states = _train(monkeypatch, False, name, params, [mx.cpu()], None,
                                    lr_mult={"fc2_weight": 0.5})
    assert calls and all(calls) == (name not in PER_KEY) and all(calls) == any(calls), calls
    for key in plain:
        assert np.array_equal(flat[key], plain[key]), key
    assert flat_states.keys() == plain_states.keys()
    for key in plain_states:
        _assert_states_equal(flat_states[key], plain_states[key], key)


KVSTORE_CASES = [(None, "1"), ("local", "1"), ("device", "1"), ("local", "0"), ("device", "0")]


@pytest.mark.parametrize("kvstore,on_kvstore", KVSTORE_CASES,
                         ids=["%s-on_kvstore%s" % case for case in KVSTORE_CASES])
@pytest.mark.parametrize("num_device", [1, 2])
@pytest.mark.parametrize("name,params", [
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}),
    ("nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}),
    ("adam", {"learning_rate": 0.01, "wd": 1e-3, "clip_gradient": 0.5}),
], ids=["sgd", "nag", "adam"])
def test_flat_update_equals_mxnet_ways(monkeypatch, name, params, num_device, kvstore,
                                       on_kvstore):
    """The fast path equals `_update_params_on_kvstore` / `_update_params` bit for bit,
    parameters and optimizer states, on one and two devices, without a kvstore and with
    'local' and 'device' (as a KVStore object on one device, where a name would give none)."""
    contexts = [mx.cpu(k) for k in range(num_device)]

    def run(flat):
        monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", on_kvstore)
        store = kvstore if kvstore is None or num_device > 1 else mx.kv.create(kvstore)
        return _train(monkeypatch, flat, name, params, contexts, store)

    flat, calls, flat_states = run(True)
    plain, _, plain_states = run(False)
    assert calls and all(calls)
    for key in plain:
        assert np.array_equal(flat[key], plain[key]), key
    assert flat_states.keys() == plain_states.keys() == plain.keys()
    for key in plain_states:
        _assert_states_equal(flat_states[key], plain_states[key], key)


def test_parameters_and_gradients_are_views_of_one_buffer():
    mod = mx.mod.Module(_symbol(), context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[("data", (12, 7))], label_shapes=[("softmax_label", (12,))])
    for k, exe in enumerate(mod._exec_group.execs):
        (flat,) = exe.flat_params
        assert isinstance(flat, FlatParams)
        # weights first (they take weight decay), then biases
        assert flat.names == ["fc1_weight", "fc2_weight", "fc1_bias", "fc2_bias"]
        for name in flat.names:
            assert np.shares_memory(exe.arg_dict[name]._data, flat.weight)
            assert np.shares_memory(exe.grad_dict[name]._data, flat.grad)
        assert flat.weight.size == 7 * 16 + 16 * 5 + 16 + 5
        assert not np.shares_memory(exe.arg_dict["data"]._data, flat.weight)


def test_fixed_parameters_stay_out_of_the_flat_buffer(monkeypatch):
    mod = mx.mod.Module(_symbol(), context=mx.cpu(), fixed_param_names=["fc1_weight"])
    mod.bind(data_shapes=[("data", (12, 7))], label_shapes=[("softmax_label", (12,))])
    mod.init_params(initializer=mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5, "wd": 0.1})
    (flat,) = mod._exec_group.execs[0].flat_params
    assert "fc1_weight" not in flat.names
    before = mod.get_params()[0]["fc1_weight"].asnumpy()
    for batch in _batches():
        mod.forward_backward(batch)
        mod.update()
    assert np.array_equal(mod.get_params()[0]["fc1_weight"].asnumpy(), before)


def test_states_loaded_from_a_file_are_moved_into_the_flat_state(tmp_path, monkeypatch):
    def run(steps_before, reload, load=True):
        mx.random.seed(5)
        mod = mx.mod.Module(_symbol(), context=mx.cpu())
        mod.bind(data_shapes=[("data", (12, 7))], label_shapes=[("softmax_label", (12,))])
        mod.init_params(initializer=mx.init.Xavier())
        mod.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": 0.01})
        batches = _batches()
        for batch in batches[:steps_before]:
            mod.forward_backward(batch)
            mod.update()
        if reload:
            fname = str(tmp_path / "m.states")
            mod.save_optimizer_states(fname)
            arg, aux = mod.get_params()
            mod2 = mx.mod.Module(_symbol(), context=mx.cpu())
            mod2.bind(data_shapes=[("data", (12, 7))],
                      label_shapes=[("softmax_label", (12,))])
            mod2.init_params(arg_params=arg, aux_params=aux)
            mod2.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": 0.01})
            if load:
                mod2.load_optimizer_states(fname)
            mod = mod2
        for batch in batches[steps_before:]:
            mod.forward_backward(batch)
            mod.update()
        return mod
    resumed = run(2, reload=True)
    states = resumed._updater.states
    record = next(iter(resumed._updater.flat_states.values()))
    for key, state in states.items():
        assert state is record.views[key]
    # the resumed run continued from the loaded moments: it equals the uninterrupted run and
    # differs from one that started the moments afresh
    a = resumed.get_params()[0]["fc1_weight"].asnumpy()
    assert np.array_equal(a, run(0, reload=False).get_params()[0]["fc1_weight"].asnumpy())
    forgot = run(2, reload=True, load=False).get_params()[0]["fc1_weight"].asnumpy()
    assert not np.array_equal(a, forgot)


def _module(monkeypatch, flat, seed, optimizer, params):
    """A bound, initialised module with its optimizer; without `flat`, its flat update path
    is switched off (until monkeypatch.undo())."""
    mx.random.seed(seed)
    mod = mx.mod.Module(_symbol(), context=mx.cpu())
    mod.bind(data_shapes=[("data", (12, 7))], label_shapes=[("softmax_label", (12,))])
    mod.init_params(initializer=mx.init.Xavier(magnitude=2.0))
    mod.init_optimizer(optimizer=optimizer, optimizer_params=dict(params))
    _switch(monkeypatch, flat)
    return mod


def _train_with_edits(monkeypatch, flat, params):
    """Train while editing the optimizer's lr_mult and wd_mult in place between updates;
    returns the parameters, the update counts, num_update and the keys holding a state."""
    mod = _module(monkeypatch, flat, 11, "sgd", params)
    optim = mod._optimizer
    edits = [lambda: None,
             lambda: optim.lr_mult.__setitem__("fc1_weight", 0.25),
             lambda: optim.wd_mult.__setitem__("fc2_weight", 3.0),
             lambda: optim.lr_mult.__setitem__("fc2_bias", 0.0),
             lambda: optim.lr_mult.clear()]
    batches = _batches()
    for edit in edits:
        edit()
        for batch in batches[:2]:
            mod.forward_backward(batch)
            mod.update()
    monkeypatch.undo()
    arg, _ = mod.get_params()
    return ({k: v.asnumpy() for k, v in arg.items()}, dict(optim._index_update_count),
            optim.num_update, sorted(mod._updater.states))


@pytest.mark.parametrize("params", [{"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-2},
                                    {"learning_rate": 0.1, "wd": 1e-2}])
def test_flat_update_follows_mults_edited_in_place(monkeypatch, params):
    # the flat path keeps each buffer's lr/wd mults between steps: an edit of the optimizer's
    # dicts in place must still reach the next update, exactly as on the per-parameter path
    flat = _train_with_edits(monkeypatch, True, params)
    plain = _train_with_edits(monkeypatch, False, params)
    for key in plain[0]:
        assert np.array_equal(flat[0][key], plain[0][key]), key
    assert flat[1:] == plain[1:]  # update counts, num_update, and a state for every key
    assert len(flat[3]) == 4 and flat[2] == 10


def test_rebinding_keeps_the_momenta_and_drops_the_old_buffer():
    """bind(force_rebind=True) keeps the optimizer: the momenta move into the new executor's
    flat buffer, and the updater stops holding the old buffer (and its states)."""
    import gc
    import weakref

    def train(rebind):
        mx.random.seed(5)
        mod = mx.mod.Module(_symbol(), context=mx.cpu())
        mod.bind(data_shapes=[("data", (12, 7))], label_shapes=[("softmax_label", (12,))])
        mod.init_params(initializer=mx.init.Xavier(magnitude=2.0))
        mod.init_optimizer(optimizer="sgd",
                           optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
        batches = _batches()
        old = None
        for i, batch in enumerate(batches):
            if rebind and i == 2:
                old = weakref.ref(mod._exec_group.execs[0].flat_params[0])
                mod.get_params()  # the trained values, which the new executors start from
                mod.bind(data_shapes=[("data", (12, 7))],
                         label_shapes=[("softmax_label", (12,))], force_rebind=True)
            mod.forward_backward(batch)
            mod.update()
        return mod, old

    mod, old = train(True)
    gc.collect()
    assert old() is None  # nothing holds the first executor's buffer any more
    assert len(mod._updater.flat_states) == 1
    a = mod.get_params()[0]
    b = train(False)[0].get_params()[0]
    for name in a:
        assert np.array_equal(a[name].asnumpy(), b[name].asnumpy()), name


@pytest.mark.parametrize("params", [{"learning_rate": 0.01, "wd": 1e-3},
                                    {"learning_rate": 0.01}])
def test_keys_with_unequal_update_counts_keep_their_own_counts(monkeypatch, params):
    """Keys of one buffer counted unequally (one was also updated elsewhere): Adam's bias
    correction reads each key's own count, so the flat pass must split its runs there and
    still match the per-parameter path bit for bit, counts included."""
    def train(flat):
        mod = _module(monkeypatch, flat, 4, "adam", params)
        optim = mod._optimizer
        for step, batch in enumerate(_batches() * 2):
            if step == 2:  # key 1 (fc1_bias) counted three more times than the others
                optim._index_update_count[1] += 3
            mod.forward_backward(batch)
            mod.update()
        monkeypatch.undo()
        arg, _ = mod.get_params()
        return {k: v.asnumpy() for k, v in arg.items()}, dict(optim._index_update_count)

    flat, plain = train(True), train(False)
    for key in plain[0]:
        assert np.array_equal(flat[0][key], plain[0][key]), key
    assert flat[1] == plain[1] and flat[1][1] == flat[1][0] + 3


def test_without_weight_decay_weights_and_biases_update_as_one_run():
    """wd=0 makes every wd product 0, so weights (wd_mult 1) and biases (wd_mult 0) need
    not be updated apart: one pass over the whole buffer."""
    mod = mx.mod.Module(_symbol(), context=mx.cpu())
    mod.bind(data_shapes=[("data", (12, 7))], label_shapes=[("softmax_label", (12,))])
    mod.init_params()
    for wd, runs in ((0.0, 1), (1e-3, 2)):
        mod.init_optimizer(optimizer="sgd", force_init=True,
                           optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": wd})
        mod.forward_backward(_batches()[0])
        mod.update()
        (record,) = mod._updater.flat_states.values()
        assert len(record.runs) == runs


@pytest.mark.parametrize("name", ["sgd", "nag"])
def test_flat_update_follows_hyperparameters_changed_between_steps(monkeypatch, name):
    """SGD's flat runs are prepared once and keep the hyperparameter products of their last
    step: momentum, rescale_grad, clip_gradient, the learning rate and weight decay set on
    the optimizer between updates must still reach the next update, bit for bit as on the
    per-parameter path (weight decay 0 -> nonzero also changes the runs' scratch buffers)."""
    def train(flat):
        mod = _module(monkeypatch, flat, 5, name,
                      {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.0})
        optim = mod._optimizer
        edits = [lambda: None,
                 lambda: setattr(optim, "momentum", 0.5),
                 lambda: setattr(optim, "clip_gradient", 0.02),
                 lambda: setattr(optim, "rescale_grad", 0.25),
                 lambda: optim.set_learning_rate(0.03),
                 lambda: setattr(optim, "wd", 1e-2),
                 lambda: setattr(optim, "clip_gradient", None),
                 lambda: setattr(optim, "momentum", 0.0)]
        history = []
        for edit, batch in zip(edits, _batches() * 2):
            edit()
            mod.forward_backward(batch)
            mod.update()
            history.append(mod.get_params()[0]["fc1_weight"].asnumpy().copy())
        monkeypatch.undo()
        return history

    flat, plain = train(True), train(False)
    for step, (a, b) in enumerate(zip(flat, plain)):
        assert np.array_equal(a, b), "step %d" % step
    assert not np.array_equal(flat[-1], flat[-2])


def test_the_update_plan_is_a_frozen_record_made_once_per_bind_and_reshape():
    mod = mx.mod.Module(_symbol(), context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[("data", (12, 7))], label_shapes=[("softmax_label", (12,))])
    mod.init_params()
    mod.init_optimizer(kvstore="local", optimizer="sgd",
                       optimizer_params={"learning_rate": 0.1, "wd": 1e-3})
    batch = _batches()[0]
    mod.forward_backward(batch)
    mod.update()
    plan = mod._update_plan
    assert isinstance(plan, fast.UpdatePlan)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.buffers = ()
    (buffer,) = plan.buffers
    assert buffer.names == ("fc1_weight", "fc2_weight", "fc1_bias", "fc2_bias")
    assert [part.flat for part in plan.device_buffers] == list(buffer.copies)
    # the Updater's keys: parameter index * number of devices + device
    assert plan.device_buffers[1].keys == (2 * 0 + 1, 2 * 2 + 1, 2 * 1 + 1, 2 * 3 + 1)
    mod.forward_backward(batch)
    mod.update()
    assert mod._update_plan is plan
    mod.reshape(data_shapes=[("data", (6, 7))], label_shapes=[("softmax_label", (6,))])
    mod.forward_backward(_batches(batch=6)[0])
    mod.update()
    assert mod._update_plan is not plan and mod._update_plan.buffers


def test_an_inference_bind_has_no_flat_update():
    mod = mx.mod.Module(_symbol(), context=mx.cpu())
    mod.bind(data_shapes=[("data", (12, 7))], for_training=False)
    assert fast.plan_update(mod._exec_group).buffers == ()


def test_float16_master_copies_take_the_per_parameter_path():
    sgd = mx.optimizer.Updater(mx.optimizer.SGD(multi_precision=True))
    assert sgd.flat_capable(False) and not sgd.flat_capable(True)
    assert mx.optimizer.Updater(mx.optimizer.SGD()).flat_capable(True)
    assert not mx.optimizer.Updater(mx.optimizer.Nadam()).flat_capable(False)


def test_the_flat_layout_asks_the_optimizer_which_names_are_decayed(monkeypatch):
    monkeypatch.setattr(mx.optimizer.Optimizer, "decays_by_default",
                        staticmethod(lambda name: name.endswith("_bias")))
    mod = mx.mod.Module(_symbol(), context=mx.cpu())
    mod.bind(data_shapes=[("data", (12, 7))], label_shapes=[("softmax_label", (12,))])
    (flat,) = mod._exec_group.execs[0].flat_params
    assert flat.names == ["fc1_bias", "fc2_bias", "fc1_weight", "fc2_weight"]
