"""Optimizers against MXNet 1.9.1, the Updater, and reading/writing optimizer states safely.

Golden data (written under MXNet by scripts in tests/data/optimizer/):
optimizer_golden.npz (gen_optimizer_golden.py: every optimizer, several option sets, weights and
states after each step) and states_reference.npz (gen_states_reference.py: the values MXNet reads
from the golden toy-0001.states / toy1-0001.states pickles).
"""
import json
import os
import pickle
import pickletools
import warnings

import numpy as np
import pytest

import minimod as mx
from minimod import lr_scheduler
from minimod import optimizer as opt
from minimod.base import MXNetError
from minimod.ndarray import serialization
from minimod.ndarray.update_steps import SGD_BLOCK, SMALL_VIEWS, BlockViews

HERE = os.path.dirname(__file__)
GOLDEN = np.load(os.path.join(HERE, "data", "optimizer", "optimizer_golden.npz"))
STATES_REF = np.load(os.path.join(HERE, "data", "optimizer", "states_reference.npz"))
TOY_STATES = os.path.join(HERE, "data", "golden", "toy-0001.states")
TOY1_STATES = os.path.join(HERE, "data", "golden", "toy1-0001.states")
CASES = sorted({k.split("/")[1] for k in GOLDEN.files if k.startswith("case/")})
RTOL = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-12}


def flatten(state):
    if state is None:
        return []
    if isinstance(state, (tuple, list)):
        return [a for item in state for a in flatten(item)]
    return [state]


def _int_keys(table):
    return {int(k) if k.isdigit() else k: v for k, v in table.items()}


def replay(name):
    """Run golden case `name` under minimod; yield (what, got, want) for every array."""
    spec = json.loads(str(GOLDEN[f"case/{name}/spec"]))
    kwargs = dict(spec["kwargs"])
    if spec["sched"]:
        cls, sched_kwargs = spec["sched"]
        kwargs["lr_scheduler"] = getattr(lr_scheduler, cls)(**sched_kwargs)
    if spec["names"] is not None:
        kwargs["param_idx2name"] = _int_keys(spec["names"])
    optimizer = opt.create(spec["opt"], **kwargs)
    if spec["lr_mult"]:
        optimizer.set_lr_mult(_int_keys(spec["lr_mult"]))
    if spec["wd_mult"]:
        optimizer.set_wd_mult(_int_keys(spec["wd_mult"]))
    updater = opt.get_updater(optimizer)
    devices, count, dtype = spec["devices"], len(spec["shapes"]), spec["dtype"]
    weights = {i * devices + k: mx.nd.array(GOLDEN[f"case/{name}/w0/{i}"], ctx=mx.cpu(k),
                                            dtype=dtype)
               for i in range(count) for k in range(devices)}
    direct_states = {}
    for step in range(spec["steps"]):
        grads = {i * devices + k: mx.nd.array(GOLDEN[f"case/{name}/g/{step}/{i}"],
                                              ctx=mx.cpu(k), dtype=dtype)
                 for i in range(count) for k in range(devices)}
        for k in range(devices):
            keys = [i * devices + k for i in range(count)]
            if spec["mode"] == "batched":
                updater(keys, [grads[j] for j in keys], [weights[j] for j in keys])
            elif spec["mode"] == "updater":
                for j in keys:
                    updater(j, grads[j], weights[j])
            else:
                optimizer._set_current_context(k)
                for j in keys:
                    if j not in direct_states:
                        direct_states[j] = optimizer.create_state_multi_precision(j, weights[j])
                    optimizer.update_multi_precision(j, weights[j], grads[j], direct_states[j])
        states = direct_states if spec["mode"] == "update" else updater.states
        for i in range(count):
            key = i * devices + devices - 1
            yield (f"step {step} weight {i}", weights[key].asnumpy(),
                   GOLDEN[f"case/{name}/w/{step}/{i}"])
            for slot, arr in enumerate(flatten(states[key])):
                yield (f"step {step} state {i}:{slot}", arr.asnumpy(),
                       GOLDEN[f"case/{name}/s/{step}/{i}/{slot}"])
    yield "num_update", np.array([optimizer.num_update]), GOLDEN[f"case/{name}/num_update"]


# LARS's trust ratio divides two float32 norms that MXNet sums in another order: a
# different last bit in the ratio, so up to a few units in the sixth digit on small momenta
CASE_RTOL = {"lars": 5e-6}


@pytest.mark.parametrize("name", CASES)
def test_optimizer_matches_mxnet(name):
    dtype = json.loads(str(GOLDEN[f"case/{name}/spec"]))["dtype"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = list(replay(name))
    for what, got, want in results:
        assert got.dtype == want.dtype and got.shape == want.shape, what
        np.testing.assert_allclose(got, want, rtol=CASE_RTOL.get(name, RTOL[dtype]), atol=0,
                                   err_msg=what)


@pytest.mark.parametrize("name", ["sgd_mom_wd", "sgd_mom_clip_rescale", "sgd_mp_mom", "adam",
                                  "nag_mom_clip", "rmsprop_centered", "ftml_clip",
                                  "dcasgd_clip", "groupadagrad_clip", "lars_sched_clip"])
def test_main_paths_are_bit_identical_to_mxnet(name):
    for what, got, want in replay(name):
        np.testing.assert_array_equal(got, want, err_msg=what)


# ---------------------------------------------------------------------------- Optimizer basics

def test_create_is_case_insensitive_and_unknown_names_fail():
    assert type(opt.create("SGD")) is opt.SGD
    assert type(opt.Optimizer.create_optimizer("adam")) is opt.Adam
    with pytest.raises(ValueError, match="Cannot find optimizer nope"):
        opt.create("nope")
    with pytest.raises(TypeError, match="momentun"):
        opt.create("adam", momentun=0.9)


def test_register_custom_optimizer():
    @opt.register
    class MyPlainDescent(opt.Optimizer):
        def update(self, index, weight, grad, state):
            weight[:] -= self._get_lr(index) * grad

    made = opt.create("mYpLaInDeScEnT", learning_rate=0.5)
    weight = mx.nd.array([1.0, 2.0])
    opt.get_updater(made)(0, mx.nd.array([2.0, 2.0]), weight)
    np.testing.assert_array_equal(weight.asnumpy(), [0.0, 1.0])


def test_learning_rate_defaults_and_scheduler():
    assert opt.SGD().learning_rate == 0.01
    assert opt.Adam().lr == 0.001
    sched = lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    sgd = opt.SGD(lr_scheduler=sched)
    assert sgd.lr is None and sgd.learning_rate == 1.0
    with pytest.raises(UserWarning):
        sgd.set_learning_rate(0.1)
    plain = opt.SGD(learning_rate=0.3)
    plain.set_learning_rate(0.2)
    assert plain.learning_rate == 0.2


def test_scheduler_base_lr_overwritten_by_learning_rate(capsys):
    sched = lr_scheduler.FactorScheduler(step=1, base_lr=1.0)
    opt.SGD(learning_rate=0.1, lr_scheduler=sched)
    assert sched.base_lr == 0.1
    assert "overwritten" in capsys.readouterr().out


def test_default_wd_mult_spares_non_weights_and_lookup_order():
    idx2name = {0: "fc_weight", 1: "fc_bias", 2: "bn_gamma", 3: "bn_beta"}
    sgd = opt.SGD(wd=0.1, learning_rate=1.0, param_idx2name=idx2name)
    assert sgd.wd_mult == {"fc_bias": 0.0, "bn_beta": 0.0}
    assert sgd._get_wds([0, 1, 2, 3, 9]) == [0.1, 0.0, 0.1, 0.0, 0.1]
    sgd.set_lr_mult({"fc_weight": 2.0, 0: 3.0})
    assert sgd._get_lr(0) == 3.0  # index beats name
    sgd.set_lr_mult({"fc_weight": 2.0})
    assert sgd._get_lr(0) == 2.0

    class Param:
        lr_mult, wd_mult = 5.0, 7.0

    sgd.param_dict = {0: Param()}
    assert sgd._get_lr(0) == 5.0 and sgd._get_wd(0) == pytest.approx(0.7)
    # computed at construction: filling idx2name later does not spare biases
    late = opt.SGD(wd=0.1)
    late.idx2name = {1: "fc_bias"}
    assert late._get_wd(1) == 0.1


def test_symbol_mult_attributes():
    data = mx.sym.Variable("data")
    weight = mx.sym.Variable("fc_weight", lr_mult=0.5, wd_mult=2.0)
    net = mx.sym.FullyConnected(data=data, weight=weight, num_hidden=3, name="fc")
    sgd = opt.SGD(sym=net, param_idx2name={0: "fc_weight", 1: "fc_bias"})
    assert sgd.lr_mult == {"fc_weight": 0.5}
    assert sgd.wd_mult == {"fc_bias": 0.0, "fc_weight": 2.0}


def test_update_counts_per_device_advance_once_per_batch():
    sgd = opt.SGD(learning_rate=0.1)
    updater = opt.get_updater(sgd)
    weights = [mx.nd.ones((2,), ctx=mx.cpu(k)) for k in range(2)]
    grads = [mx.nd.ones((2,), ctx=mx.cpu(k)) for k in range(2)]
    for _ in range(3):
        for k in range(2):
            updater([k], [grads[k]], [weights[k]])
    assert sgd.num_update == 3
    assert sgd._all_index_update_counts == {0: {0: 3}, 1: {1: 3}}
    np.testing.assert_array_equal(weights[0].asnumpy(), weights[1].asnumpy())


def test_begin_num_update_offsets_counts():
    adam = opt.Adam(begin_num_update=10)
    opt.get_updater(adam)(0, mx.nd.ones((2,)), mx.nd.ones((2,)))
    assert adam._index_update_count[0] == 11 and adam.num_update == 11


def test_getstate_drops_param_dict():
    sgd = opt.SGD(param_dict={0: object()}, momentum=0.9)
    assert "param_dict" not in sgd.__getstate__()
    clone = pickle.loads(pickle.dumps(sgd))
    assert clone.param_dict == {} and clone.momentum == 0.9


# ---------------------------------------------------------------------------- in-place updates

@pytest.mark.parametrize("name", ["sgd", "nag", "adam", "adagrad", "rmsprop", "adadelta",
                                  "adamax", "nadam", "signum", "ftrl"])
def test_updates_write_into_the_weight_buffer(name):
    optimizer = opt.create(name, wd=0.01, **({"momentum": 0.9} if name in ("sgd", "nag") else {}))
    updater = opt.get_updater(optimizer)
    weight = mx.nd.array(np.linspace(-1, 1, 12).reshape(3, 4))
    buffer = weight._data
    before = weight.asnumpy()
    for _ in range(2):
        updater(0, mx.nd.array(np.full((3, 4), 0.3)), weight)
    assert weight._data is buffer
    assert not np.array_equal(weight.asnumpy(), before)


def test_batched_call_equals_one_call_per_key():
    rng = np.random.RandomState(0)
    shapes = [(4, 3), (4,), (2, 4), (2,), (3, 3)]
    inits = [rng.randn(*s).astype(np.float32) for s in shapes]
    grads = [[rng.randn(*s).astype(np.float32) for s in shapes] for _ in range(3)]
    results = []
    for batched in (True, False):
        sgd = opt.SGD(learning_rate=0.1, momentum=0.9, wd=0.01)
        updater = opt.get_updater(sgd)
        weights = [mx.nd.array(w) for w in inits]
        for step in grads:
            nds = [mx.nd.array(g) for g in step]
            if batched:
                updater(list(range(len(shapes))), nds, weights)
            else:
                for i in range(len(shapes)):
                    updater(i, nds[i], weights[i])
        results.append([w.asnumpy() for w in weights])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_updater_decodes_bytes_keys():
    updater = opt.get_updater(opt.SGD(momentum=0.9))
    updater(b"fc_weight", mx.nd.ones((2,)), mx.nd.ones((2,)))
    assert list(updater.states) == ["fc_weight"]


def test_float16_without_multi_precision_warns():
    updater = opt.get_updater(opt.SGD(momentum=0.9))
    with pytest.warns(UserWarning, match="multi_precision"):
        updater(0, mx.nd.ones((2,), dtype="float16"), mx.nd.ones((2,), dtype="float16"))


def test_subclass_overriding_update_is_called():
    calls = []

    class Logged(opt.Adam):
        def update(self, index, weight, grad, state):
            calls.append(index)
            super().update(index, weight, grad, state)

    updater = opt.get_updater(Logged())
    updater([0, 1], [mx.nd.ones((2,))] * 2, [mx.nd.ones((2,)), mx.nd.ones((3,))[:2]])
    assert calls == [0, 1]


def test_test_optimizer():
    updater = opt.get_updater(opt.create("test", rescale_grad=2.0))
    weight = mx.nd.ones((2,))
    updater(0, mx.nd.ones((2,)), weight)
    np.testing.assert_array_equal(weight.asnumpy(), [3.0, 3.0])
    np.testing.assert_array_equal(updater.states[0].asnumpy(), [3.0, 3.0])


# ---------------------------------------------------------------------------- MXNet .states

def _read(path):
    with open(path, "rb") as handle:
        return handle.read()


@pytest.mark.parametrize("path, fname", [(TOY_STATES, "toy-0001.states"),
                                         (TOY1_STATES, "toy1-0001.states")])
def test_mxnet_states_load_with_mxnet_values(path, fname):
    updater = opt.get_updater(opt.create("adam" if "toy1" in fname else "sgd"))
    updater.set_states(_read(path))
    want = {k: v for k, v in STATES_REF.items() if k.startswith(fname + "/")}
    got = {}
    for key, state in updater.states.items():
        for slot, arr in enumerate(flatten(state)):
            assert isinstance(arr, mx.nd.NDArray)
            got[f"{fname}/{key}/{slot}"] = arr.asnumpy()
    assert sorted(got) == sorted(want)
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)
    assert all(synced is False for synced in updater.states_synced.values())


def test_mxnet_states_key_types():
    kv_states = opt.load_states(_read(TOY_STATES))
    assert set(kv_states) == {"fc1_weight", "fc1_bias", "bn1_gamma", "bn1_beta", "fc2_weight",
                              "fc2_bias"}
    adam_states = opt.load_states(_read(TOY1_STATES))
    assert set(adam_states) == set(range(6))
    assert all(isinstance(s, tuple) and len(s) == 2 for s in adam_states.values())


def test_loaded_states_move_to_the_weight_context_and_keep_training():
    updater = opt.get_updater(opt.SGD(momentum=0.9, learning_rate=0.1))
    updater.set_states(_read(TOY_STATES))
    before = updater.states["fc1_bias"].asnumpy()
    weight = mx.nd.zeros((4,), ctx=mx.cpu(1))
    updater(b"fc1_bias", mx.nd.zeros((4,), ctx=mx.cpu(1)), weight)
    assert updater.states["fc1_bias"].context == mx.cpu(1)
    assert updater.states_synced["fc1_bias"] is True
    np.testing.assert_allclose(weight.asnumpy(), np.float32(0.9) * before, rtol=1e-6)


class _Gadget:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_states_pickle_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    payloads = [
        pickle.dumps(_Gadget(marker)),
        pickle.dumps({0: _Gadget(marker)}, protocol=2),
        pickle.dumps({"w": (None, _Gadget(marker))}, protocol=0),
    ]
    for payload in payloads:
        with pytest.raises(opt.UnsafeStatesError, match=r"refused global (posix|os|nt)\.system"):
            opt.get_updater(opt.SGD()).set_states(payload)
        assert not marker.exists()
    err = opt.UnsafeStatesError("x")
    assert isinstance(err, MXNetError) and isinstance(err, pickle.UnpicklingError)


def test_dump_optimizer_pickles_are_refused_with_a_reason():
    payload = (b"\x80\x02(}cmxnet.optimizer.optimizer\nSGD\n)\x81}bt.")
    with pytest.raises(opt.UnsafeStatesError, match="mxnet.optimizer.optimizer.SGD.*Optimizer"):
        opt.load_states(payload)


def test_garbage_states_raise_mxnet_error():
    with pytest.raises(MXNetError, match="cannot read optimizer states"):
        opt.load_states(b"\x80\x04not a pickle at all")
    with pytest.raises(TypeError, match="bytes"):
        opt.load_states("text")


def test_dump_states_mxnet_round_trip_and_globals():
    states = {0: None, "w": mx.nd.array([[1.0, 2.0]]),
              3: (mx.nd.array([1, 2], dtype="int32"), mx.nd.array([0.5], dtype="float16")),
              2 ** 40: [mx.nd.array([7.0], dtype="float64")]}
    payload = opt.dump_states_mxnet(states)
    globals_seen = {arg for op, arg, _ in pickletools.genops(payload) if op.name == "GLOBAL"}
    assert globals_seen == {"mxnet.ndarray.ndarray NDArray", "builtins bytearray"}
    back = opt.load_states(payload)
    assert set(back) == set(states) and back[0] is None
    np.testing.assert_array_equal(back["w"].asnumpy(), [[1.0, 2.0]])
    assert isinstance(back[3], tuple) and back[3][0].dtype == np.int32
    assert isinstance(back[2 ** 40], list) and back[2 ** 40][0].dtype == np.float64


def test_updater_get_states_mxnet_loads_back():
    updater = opt.get_updater(opt.Adam())
    updater(1, mx.nd.ones((3,)), mx.nd.ones((3,)))
    back = opt.load_states(updater.get_states_mxnet())
    for a, b in zip(back[1], updater.states[1]):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


# ---------------------------------------------------------------------------- native states

def _trained_updater(name="adam", keys=(0, "fc_bias"), **kwargs):
    updater = opt.get_updater(opt.create(name, **kwargs))
    rng = np.random.RandomState(3)
    weights = {k: mx.nd.array(rng.randn(2, 3)) for k in keys}
    for _ in range(2):
        for k in keys:
            updater(k, mx.nd.array(rng.randn(2, 3)), weights[k])
    return updater


def test_native_states_round_trip_without_pickle():
    updater = _trained_updater(multi_precision=False)
    payload = updater.get_states()
    assert payload[:8] == (0x112).to_bytes(8, "little")
    loaded = serialization.load_from_bytes(payload)  # an ordinary NDArray file
    assert "__minimod_states__" in loaded and "0:1" in loaded and "fc_bias:0" in loaded
    fresh = opt.get_updater(opt.Adam())
    fresh.set_states(payload)
    assert set(fresh.states) == {0, "fc_bias"}
    for key, state in updater.states.items():
        assert isinstance(fresh.states[key], tuple)
        for a, b in zip(state, fresh.states[key]):
            np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    assert fresh.optimizer.num_update == 0  # MXNet does not restore counts


def test_native_states_nested_structures_and_counters():
    states = {5: (None, mx.nd.array([1.0])), "b": [mx.nd.array([2.0]), (mx.nd.array([3.0]),)],
              "n": None}
    updater = opt.get_updater(opt.SGD())
    updater.states = states
    updater.optimizer._update_count(5)
    payload = updater.get_states()
    fresh = opt.get_updater(opt.SGD())
    fresh.set_states(payload, restore_counters=True)
    assert fresh.optimizer.num_update == 1 and fresh.optimizer._index_update_count == {5: 1}
    assert fresh.states["n"] is None and fresh.states[5][0] is None
    assert isinstance(fresh.states["b"], list) and isinstance(fresh.states["b"][1], tuple)
    np.testing.assert_array_equal(fresh.states["b"][1][0].asnumpy(), [3.0])


def test_native_states_dump_optimizer_restores_hyperparameters():
    updater = _trained_updater("sgd", momentum=0.7, learning_rate=0.3)
    payload = updater.get_states(dump_optimizer=True)
    fresh = opt.get_updater(opt.Adam())
    fresh.set_states(payload)
    assert type(fresh.optimizer) is opt.SGD
    assert fresh.optimizer.momentum == 0.7 and fresh.optimizer.lr == 0.3


def test_native_states_colliding_keys_are_an_error():
    updater = opt.get_updater(opt.SGD())
    updater.states = {3: None, "3": None}
    with pytest.raises(MXNetError, match="collide"):
        updater.get_states()


def test_params_file_is_not_a_states_payload():
    payload = serialization.save_to_bytes({"arg:w": mx.nd.ones((2,))})
    with pytest.raises(MXNetError, match="header"):
        opt.load_states(payload)


# ---------------------------------------------------------------------------- keyed by name

def test_states_survive_a_change_of_device_count():
    names = ["fc_weight", "fc_bias"]
    two_dev = {i * 2 + k: n for i, n in enumerate(names) for k in range(2)}
    updater = opt.get_updater(opt.SGD(momentum=0.9, learning_rate=0.1))
    weights = {key: mx.nd.ones((3,), ctx=mx.cpu(key % 2)) for key in two_dev}
    for k in range(2):
        keys = [i * 2 + k for i in range(2)]
        updater(keys, [mx.nd.ones((3,), ctx=mx.cpu(k)) * (i + 1) for i in range(2)],
                [weights[j] for j in keys])
    by_name = updater.states_by_name(two_dev)
    assert set(by_name) == set(names)
    payload = updater.dump_states_by_name(two_dev)

    three_dev = {i * 3 + k: n for i, n in enumerate(names) for k in range(3)}
    fresh = opt.get_updater(opt.SGD(momentum=0.9, learning_rate=0.1))
    fresh.set_states_by_name(payload, three_dev)
    assert set(fresh.states) == set(three_dev)
    for key, name in three_dev.items():
        np.testing.assert_array_equal(fresh.states[key].asnumpy(), by_name[name].asnumpy())
    assert fresh.states[0] is not fresh.states[1]  # every device gets its own copy

    kv = opt.get_updater(opt.SGD(momentum=0.9))
    kv.load_states_by_name(by_name, {n: n for n in names})  # update-on-kvstore keys
    assert set(kv.states) == set(names)


def test_mxnet_int_keyed_states_to_names():
    saved = {i: n for i, n in enumerate(["fc1_weight", "fc1_bias", "bn1_gamma", "bn1_beta",
                                         "fc2_weight", "fc2_bias"])}
    updater = opt.get_updater(opt.Adam())
    updater.set_states_by_name(_read(TOY1_STATES), {n: n for n in saved.values()}, saved)
    np.testing.assert_array_equal(updater.states["fc2_bias"][1].asnumpy(),
                                  STATES_REF["toy1-0001.states/5/1"])
    with pytest.raises(MXNetError, match="saved_idx2name"):
        updater.set_states_by_name(_read(TOY1_STATES), {})


def test_module_alias():
    assert opt.optimizer is opt
    assert mx.optimizer.optimizer.SGD is opt.SGD


@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("clip", [None, 0.02])
@pytest.mark.parametrize("wd", [0.0, 1e-3])
def test_sgd_blocked_update_of_a_large_buffer_is_mxnets_whole_array_arithmetic(momentum, clip,
                                                                              wd):
    # more elements than SGD_BLOCK and not a multiple of it: several blocks and a short one
    n = 2 * SGD_BLOCK + 1234
    rng = np.random.RandomState(7)
    w0, g0, m0 = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    sgd = opt.SGD(learning_rate=0.1, momentum=momentum, wd=wd, clip_gradient=clip,
                  rescale_grad=1.0 / 3)
    weight, grad = mx.nd.array(w0), mx.nd.array(g0)
    state = sgd.create_state(0, weight)
    if state is not None:
        state[:] = m0
    sgd.update(0, weight, grad, state)
    # the reference: MXNet's sgd(_mom)_update, one whole-array pass per operation, products of
    # the float32 hyperparameters rounded to float32
    f = np.float32
    if clip:
        step = np.clip(g0 * f(1.0 / 3), f(-clip), f(clip)) * f(0.1)
    else:
        step = g0 * (f(0.1) * f(1.0 / 3))
    decay = w0 * (f(0.1) * f(wd))
    if momentum:
        mom = m0 * f(momentum)
        if wd:
            mom = mom - decay
        mom = mom - step
        np.testing.assert_array_equal(state.asnumpy(), mom)
        want = w0 + mom
    else:
        want = w0 - (step + decay if wd else step)
    np.testing.assert_array_equal(weight.asnumpy(), want)
    np.testing.assert_array_equal(grad.asnumpy(), g0)  # the gradient is left as it was


def _sgd_mom_reference(w, g, m, lr, mu, rescale):
    f = np.float32
    m = m * f(mu) - g * (f(lr) * f(rescale))
    return w + m, m


def test_sgd_block_views_are_made_once_per_buffer_and_follow_new_buffers():
    n = 2 * SGD_BLOCK + 99
    rng = np.random.RandomState(3)
    sgd = opt.SGD(learning_rate=0.1, momentum=0.9, rescale_grad=0.5)
    w0, g0 = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    weight, grad = mx.nd.array(w0), mx.nd.array(g0)
    state = sgd.create_state(0, weight)
    sgd.update(0, weight, grad, state)
    views = sgd._blocks(weight._data, grad._data, state._data, 1)
    assert len(views) == 3 and views[-1][0].size == 99
    sgd.update(0, weight, grad, state)
    # the second update ran on the same block list, and still equals two whole-array updates
    assert sgd._blocks(weight._data, grad._data, state._data, 1) is views
    want_w, want_m = _sgd_mom_reference(w0, g0, np.zeros(n, np.float32), 0.1, 0.9, 0.5)
    want_w, want_m = _sgd_mom_reference(want_w, g0, want_m, 0.1, 0.9, 0.5)
    np.testing.assert_array_equal(weight.asnumpy(), want_w)
    np.testing.assert_array_equal(state.asnumpy(), want_m)
    # another buffer (same sizes) gets its own views, over its own memory
    w1 = rng.standard_normal(n).astype(np.float32)
    weight1 = mx.nd.array(w1)
    state1 = sgd.create_state(1, weight1)
    sgd.update(1, weight1, grad, state1)
    views1 = sgd._blocks(weight1._data, grad._data, state1._data, 1)
    assert views1 is not views and np.shares_memory(views1[0][0], weight1._data)
    np.testing.assert_array_equal(
        weight1.asnumpy(), _sgd_mom_reference(w1, g0, np.zeros(n, np.float32), 0.1, 0.9, 0.5)[0])
    np.testing.assert_array_equal(weight.asnumpy(), want_w)  # the first buffer is untouched


def test_sgd_block_views_keep_only_the_latest_buffers():
    n = SGD_BLOCK + 1
    sgd = opt.SGD(learning_rate=0.1, momentum=0.9)
    g, m = np.ones(n, np.float32), np.zeros(n, np.float32)
    first = np.zeros(n, np.float32)
    views = sgd._blocks(first, g, m, 1)
    assert sgd._blocks(first, g, m, 1) is views
    for _ in range(BlockViews.LARGE):
        sgd._blocks(np.zeros(n, np.float32), g, m, 1)
    cache = sgd._scratch[BlockViews]
    assert len(cache._entries) == BlockViews.LARGE  # bounded: `first`'s list was let go
    again = sgd._blocks(first, g, m, 1)
    assert again is not views and all(np.shares_memory(v[0], first) for v in again)
    # an array that merely has a cached array's id is not taken for it
    key = next(iter(cache._entries))
    other = np.zeros(n, np.float32)
    cache._entries[(id(other),) + key[1:]] = cache._entries.pop(key)
    assert cache.get(other, g, m, 1) is None


def test_sgd_small_arrays_keep_their_one_block_list_and_stay_exact():
    """A small array's one-block list is kept by identity like a flat buffer's (the
    `SMALL` most recent), and updates through the kept list equal whole-array updates."""
    rng = np.random.RandomState(5)
    sgd = opt.SGD(learning_rate=0.1, momentum=0.9, rescale_grad=0.5)
    w0, g0 = (rng.standard_normal((3, 4)).astype(np.float32) for _ in range(2))
    weight, grad = mx.nd.array(w0), mx.nd.array(g0)
    state = sgd.create_state(0, weight)
    views = sgd._blocks(weight._data, grad._data, state._data, 1)
    assert len(views) == 1 and views[0][0] is weight._data
    for _ in range(2):
        sgd.update(0, weight, grad, state)
    assert sgd._blocks(weight._data, grad._data, state._data, 1) is views
    want_w, want_m = _sgd_mom_reference(w0, g0, np.zeros_like(w0), 0.1, 0.9, 0.5)
    want_w, want_m = _sgd_mom_reference(want_w, g0, want_m, 0.1, 0.9, 0.5)
    np.testing.assert_array_equal(weight.asnumpy(), want_w)
    np.testing.assert_array_equal(state.asnumpy(), want_m)
    others = [np.zeros(7, np.float32) for _ in range(BlockViews.SMALL)]
    for other in others:
        sgd._blocks(other, np.ones(7, np.float32), None, 1)
    assert len(sgd._scratch[SMALL_VIEWS]._entries) == BlockViews.SMALL
    assert sgd._blocks(weight._data, grad._data, state._data, 1) is not views  # let go


def test_sgld_adds_langevin_noise_of_variance_lr():
    mx.random.seed(0)
    opt = mx.optimizer.create("sgld", learning_rate=0.01, wd=0.1)
    updater = mx.optimizer.get_updater(opt)
    weight = mx.nd.zeros((40000,))
    updater(0, mx.nd.ones((40000,)), weight)
    w = weight.asnumpy()
    assert abs(w.mean() + 0.005) < 5 * np.sqrt(0.01 / w.size)  # drift -lr/2 * grad
    assert abs(w.var() - 0.01) < 0.05 * 0.01


def test_dcasgd_with_momentum_runs_where_mxnet_raises():
    opt = mx.optimizer.create("dcasgd", learning_rate=0.1, momentum=0.9, lamda=0.0)
    updater = mx.optimizer.get_updater(opt)
    weight = mx.nd.ones((2, 2))
    for _ in range(2):
        updater(0, mx.nd.ones((2, 2)), weight)
    # lamda=0: plain momentum SGD, m1 = -0.1, m2 = 0.9 m1 - 0.1
    np.testing.assert_allclose(weight.asnumpy(), 1 - 0.1 - 0.19, rtol=1e-6)


def test_group_adagrad_needs_2d_weights_and_no_weight_decay():
    assert mx.optimizer.contrib.GroupAdaGrad is mx.optimizer.GroupAdaGrad
    updater = mx.optimizer.get_updater(mx.optimizer.create("groupadagrad"))
    with pytest.raises(mx.base.MXNetError, match="2-D weights"):
        updater(0, mx.nd.ones((3,)), mx.nd.ones((3,)))
    updater = mx.optimizer.get_updater(mx.optimizer.create("groupadagrad", wd=0.1))
    with pytest.raises(mx.base.MXNetError, match="does not support weight decay"):
        updater(0, mx.nd.ones((2, 3)), mx.nd.ones((2, 3)))
