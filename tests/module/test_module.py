"""Module: resume, devices, MXNet checkpoints, unsafe states, and the errors users hit."""
import os
import pickle

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError, ShapeError


def _mlp(batchnorm=True):
    with mx.name.NameManager():
        net = mx.sym.Variable("data")
        net = mx.sym.FullyConnected(net, num_hidden=12, name="fc1")
        if batchnorm:
            net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn1")
        net = mx.sym.Activation(net, act_type="relu")
        net = mx.sym.FullyConnected(net, num_hidden=4, name="fc2")
        return mx.sym.SoftmaxOutput(net, name="softmax")


def _data(n=96, seed=0):
    rng = np.random.RandomState(seed)
    return (rng.uniform(-1, 1, (n, 6)).astype(np.float32),
            rng.randint(0, 4, n).astype(np.float32))


def _batch(x, y, i, size=12):
    return mx.io.DataBatch([mx.nd.array(x[i * size:(i + 1) * size])],
                           [mx.nd.array(y[i * size:(i + 1) * size])])


def _module(ctx, seed=3, batchnorm=True):
    mod = mx.mod.Module(_mlp(batchnorm), context=ctx)
    mod.bind(data_shapes=[("data", (12, 6))], label_shapes=[("softmax_label", (12,))])
    mx.random.seed(seed)
    mod.init_params(mx.init.Xavier())
    return mod


def _steps(mod, x, y, first, count):
    for i in range(first, first + count):
        mod.forward_backward(_batch(x, y, i))
        mod.update()


def _params(mod):
    arg, aux = mod.get_params()
    return {k: v.asnumpy().copy() for k, v in list(arg.items()) + list(aux.items())}


OPTIMIZERS = [("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}),
              ("adam", {"learning_rate": 0.01})]


# (kvstore=None on several devices is left out: there each device trains its own copy and a
# checkpoint holds their average, so a resumed run starts from a different point, as in MXNet)
@pytest.mark.parametrize("ndev,kvstore", [(1, "local"), (2, "local"), (2, "device")])
@pytest.mark.parametrize("optimizer,params", OPTIMIZERS)
def test_resume_continues_bit_identically(tmp_path, optimizer, params, ndev, kvstore):
    ctx = [mx.cpu(i) for i in range(ndev)]
    x, y = _data()
    straight = _module(ctx)
    straight.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=params)
    _steps(straight, x, y, 0, 3)
    prefix = str(tmp_path / "ck")
    straight.save_checkpoint(prefix, 3, save_optimizer_states=True)
    _steps(straight, x, y, 3, 3)
    resumed = mx.mod.Module.load(prefix, 3, load_optimizer_states=True, context=ctx)
    resumed.bind(data_shapes=[("data", (12, 6))], label_shapes=[("softmax_label", (12,))])
    resumed.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=params)
    _steps(resumed, x, y, 3, 3)
    want, got = _params(straight), _params(resumed)
    for name in want:
        if ndev > 1 and "moving" in name:
            # each device keeps its own BatchNorm statistics; a checkpoint holds their mean
            np.testing.assert_allclose(got[name], want[name], rtol=1e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_states_survive_a_change_of_device_count(tmp_path):
    x, y = _data()
    # no BatchNorm here: its batch statistics depend on how the batch is split
    two = _module([mx.cpu(0), mx.cpu(1)], batchnorm=False)
    two.init_optimizer(kvstore="local", optimizer="adam", optimizer_params={"learning_rate": 0.01})
    _steps(two, x, y, 0, 3)
    prefix = str(tmp_path / "ck")
    two.save_checkpoint(prefix, 3, save_optimizer_states=True)
    _steps(two, x, y, 3, 2)
    one = mx.mod.Module.load(prefix, 3, load_optimizer_states=True)
    one.bind(data_shapes=[("data", (12, 6))], label_shapes=[("softmax_label", (12,))])
    one.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": 0.01})
    assert len(one._updater.states) == len(one._param_names) == 4  # every Adam state arrived
    _steps(one, x, y, 3, 2)
    want, got = _params(two), _params(one)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("ctx_count,workload", [(2, None), (3, None), (4, None), (3, [1, 2, 1]),
                                                (2, [3, 1])])
def test_many_cpu_contexts_match_one(ctx_count, workload):
    x, y = _data(seed=5)

    def train(ctx, wl):
        with mx.name.NameManager():
            net = mx.sym.Variable("data")
            net = mx.sym.FullyConnected(net, num_hidden=10, name="fc1")
            net = mx.sym.Activation(net, act_type="tanh")
            net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=4, name="fc2"),
                                       name="softmax")
        mod = mx.mod.Module(net, context=ctx, work_load_list=wl)
        mod.bind(data_shapes=[("data", (12, 6))], label_shapes=[("softmax_label", (12,))])
        mx.random.seed(1)
        mod.init_params(mx.init.Xavier())
        mod.init_optimizer(optimizer="sgd",
                           optimizer_params={"learning_rate": 0.5, "momentum": 0.5})
        _steps(mod, x, y, 0, 6)
        return _params(mod)
    want = train([mx.cpu(0)], None)
    got = train([mx.cpu(i) for i in range(ctx_count)], workload)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)


class _Boom:
    def __reduce__(self):
        return (os.system, ("touch %s" % _Boom.marker,))


def test_states_pickle_that_runs_code_is_refused(tmp_path):
    x, y = _data()
    mod = _module(mx.cpu())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    _steps(mod, x, y, 0, 1)
    prefix = str(tmp_path / "evil")
    mod.save_checkpoint(prefix, 1)
    marker = tmp_path / "pwned"
    _Boom.marker = str(marker)
    with open(prefix + "-0001.states", "wb") as f:
        pickle.dump({0: _Boom()}, f)
    loaded = mx.mod.Module.load(prefix, 1, load_optimizer_states=True)
    loaded.bind(data_shapes=[("data", (12, 6))], label_shapes=[("softmax_label", (12,))])
    with pytest.raises(MXNetError, match="system"):
        loaded.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    assert not marker.exists()


def test_minimod_states_hold_no_pickle(tmp_path):
    x, y = _data()
    mod = _module(mx.cpu())
    mod.init_optimizer(optimizer="adam")
    _steps(mod, x, y, 0, 1)
    mod.save_optimizer_states(str(tmp_path / "s.states"))
    raw = (tmp_path / "s.states").read_bytes()
    assert raw[:8] == (0x112).to_bytes(8, "little")  # MXNet's NDArray list file, not a pickle
    assert b"\x80\x04" not in raw[:16]
    listing = mx.nd.load(str(tmp_path / "s.states"))
    assert any(k.startswith("fc1_weight:") for k in listing)


def test_predict_with_new_batch_size_and_no_labels():
    x, y = _data()
    mod = _module(mx.cpu())
    mod.init_optimizer(optimizer="sgd")
    _steps(mod, x, y, 0, 1)
    out = mod.predict(x[:7])
    assert out.shape == (7, 4)
    np.testing.assert_allclose(out.asnumpy().sum(axis=1), 1.0, rtol=1e-5)
    mod.forward(mx.io.DataBatch([mx.nd.array(x[:5])]), is_train=False)
    assert mod.get_outputs()[0].shape == (5, 4)
    assert mod.output_shapes[0][1] == (5, 4)


def test_errors_users_hit(tmp_path):
    sym = _mlp()
    with pytest.raises(ValueError, match="dat"):
        mx.mod.Module(sym, data_names=["dat"])
    mod = mx.mod.Module(sym)
    with pytest.raises(ValueError, match="don't match names"):
        mod.bind(data_shapes=[("images", (12, 6))])
    with pytest.raises(MXNetError, match="bind"):
        mod.forward(_batch(*_data(), 0))
    mod.bind(data_shapes=[("data", (12, 6))], label_shapes=[("softmax_label", (12,))])
    mod.init_params()
    with pytest.raises(MXNetError, match="init_optimizer"):
        mod.update()
    with pytest.raises(ShapeError, match=r"\(12, 7\)"):
        mod.forward(mx.io.DataBatch([mx.nd.zeros((12, 7))], [mx.nd.zeros((12,))]))
    empty = mx.io.ResizeIter(mx.io.NDArrayIter(np.zeros((4, 6)), np.zeros(4), batch_size=4),
                             0)
    with pytest.raises(MXNetError, match="no batch"):
        mx.mod.Module(sym).fit(empty, num_epoch=1)
    mod.save_checkpoint(str(tmp_path / "ck"), 1)
    arg, aux = mod.get_params()
    partial = {k: v for k, v in arg.items() if k != "fc2_weight"}
    with pytest.raises(RuntimeError, match="fc2_weight"):
        mod.set_params(partial, aux, force_init=True)
    with pytest.raises(MXNetError, match="0009.params"):
        mx.mod.Module.load(str(tmp_path / "ck"), 9)


def test_fit_reaches_accuracy_and_logs(caplog):
    rng = np.random.RandomState(0)
    x = rng.normal(size=(200, 6)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.float32)
    it = mx.io.NDArrayIter(x, y, batch_size=20, shuffle=False)
    with mx.name.NameManager():
        net = mx.sym.Variable("data")
        net = mx.sym.Activation(mx.sym.FullyConnected(net, num_hidden=8), act_type="relu")
        net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=2), name="softmax")
    mod = mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)])
    caplog.set_level("INFO")
    mod.fit(it, eval_data=it, num_epoch=8, optimizer_params={"learning_rate": 0.5})
    assert mod.score(it, "acc")[0][1] > 0.95
    assert "Epoch[7] Validation-accuracy=" in caplog.text
    assert "Epoch[0] Train-accuracy=" in caplog.text


def test_labels_return_after_an_unlabelled_batch_of_another_size():
    """predict on 5 samples reshapes without labels; the next labelled batch (no
    provide_label) must train on its labels, exactly like a fresh module."""
    x, y = _data()
    used = _module(mx.cpu())
    used.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    fresh = _module(mx.cpu())
    fresh.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    used.predict(x[:5])
    for mod in (used, fresh):
        mod.forward_backward(_batch(x, y, 0))
    for name, grad in zip(used._param_names, used._exec_group.grad_arrays):
        np.testing.assert_array_equal(grad[0].asnumpy(),
                                      fresh._exec_group.grad_arrays[
                                          fresh._param_names.index(name)][0].asnumpy())


def _fit_epochs(mod_cls, ctx, epochs=3):
    """fit `epochs` epochs of 4 batches; the epoch_end_callback's parameters, copied."""
    x, y = _data(48)
    it = mx.io.NDArrayIter(x, y, batch_size=12, shuffle=False)
    mod = mod_cls(_mlp(), context=ctx)
    seen = []

    def snapshot(epoch, _sym, arg, aux):
        seen.append({k: v.asnumpy().copy() for k, v in list(arg.items()) + list(aux.items())})

    mx.random.seed(5)
    mod.fit(it, num_epoch=epochs, initializer=mx.init.Xavier(), epoch_end_callback=snapshot,
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    return mod, seen


class _CountingModule(mx.mod.Module):
    """A subclass that overrides set_params: fit must still call it at every epoch's end."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.set_calls = 0

    def set_params(self, *args, **kwargs):
        self.set_calls += 1
        super().set_params(*args, **kwargs)


@pytest.mark.parametrize("ctx", [mx.cpu(), [mx.cpu(0), mx.cpu(1)]], ids=["1dev", "2dev"])
def test_fit_epoch_end_params_are_the_trained_ones(ctx):
    """The epoch_end_callback gets the executor's parameters (and BatchNorm's aux states) as
    they are after the epoch, on one device (where fit skips setting them back onto
    themselves) and on two (where set_params averages the devices), and later epochs keep
    training from them: the same numbers as a subclass for which fit makes both calls."""
    mod, seen = _fit_epochs(mx.mod.Module, ctx)
    ref_mod, ref_seen = _fit_epochs(_CountingModule, ctx)
    assert ref_mod.set_calls == 3
    assert len(seen) == len(ref_seen) == 3
    assert any(not np.array_equal(seen[0][k], seen[1][k]) for k in seen[0])  # it trained
    for got, want in zip(seen, ref_seen):
        assert sorted(got) == sorted(want)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    exe = mod._exec_group.execs[0]
    for name in mod._param_names:
        np.testing.assert_array_equal(exe.arg_dict[name].asnumpy(), seen[-1][name])


def test_get_params_copies_one_device_exactly_and_stays_a_copy():
    """get_params on one device: the same bits as the executor's arrays (negative zeros
    included), in arrays that training does not write to afterwards."""
    x, y = _data()
    mod = _module(mx.cpu())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    _steps(mod, x, y, 0, 2)
    exe = mod._exec_group.execs[0]
    exe.arg_dict["fc1_bias"][:] = mx.nd.array(np.array([-0.0] * 12, dtype=np.float32))
    mod._params_dirty = True
    arg, _ = mod.get_params()
    got = arg["fc1_bias"].asnumpy()
    assert np.all(np.signbit(got)) and np.all(got == 0)
    before = arg["fc1_weight"].asnumpy().copy()
    _steps(mod, x, y, 2, 1)
    np.testing.assert_array_equal(arg["fc1_weight"].asnumpy(), before)


@pytest.mark.parametrize("ndev", [1, 2])
def test_forward_backward_is_forward_then_backward(ndev):
    """Module.forward_backward runs the executors' one-run training step: the same
    parameters, outputs and metric as forward(is_train=True) then backward(), on one device
    and sliced over two, with a batch of another size re-shaping the module on the way."""
    x, y = _data()
    runs = []
    for fused in (True, False):
        mod = _module([mx.cpu(i) for i in range(ndev)])
        mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1,
                                                              "momentum": 0.9})
        metric = mx.metric.Accuracy()
        for i, size in enumerate((12, 12, 8, 12)):
            batch = _batch(x, y, i, size)
            if fused:
                mod.forward_backward(batch)
            else:
                mod.forward(batch, is_train=True)
                mod.backward()
            mod.update()
            mod.update_metric(metric, batch.label)
        runs.append((_params(mod), mod.get_outputs()[0].asnumpy(), metric.get()))
    (fused, out, acc), (plain, out_plain, acc_plain) = runs
    assert fused.keys() == plain.keys() and acc == acc_plain
    assert np.array_equal(out, out_plain)
    for key in plain:
        assert np.array_equal(fused[key], plain[key]), key


def test_forward_backward_calls_a_subclass_forward_and_backward():
    """A Module subclass that overrides forward or backward (as user code does) has them
    called by forward_backward, as BaseModule's forward_backward would."""
    calls = []

    class Traced(mx.mod.Module):
        def forward(self, data_batch, is_train=None):
            calls.append("forward")
            super().forward(data_batch, is_train)

        def backward(self, out_grads=None):
            calls.append("backward")
            super().backward(out_grads)

    x, y = _data()
    mod = Traced(_mlp(), context=mx.cpu())
    mod.bind(data_shapes=[("data", (12, 6))], label_shapes=[("softmax_label", (12,))])
    mod.init_params(mx.init.Xavier())
    mod.forward_backward(_batch(x, y, 0))
    assert calls == ["forward", "backward"]


def test_forward_backward_needs_a_training_bind():
    x, y = _data()
    mod = mx.mod.Module(_mlp(), context=mx.cpu())
    mod.bind(data_shapes=[("data", (12, 6))], label_shapes=[("softmax_label", (12,))],
             for_training=False)
    mod.init_params(mx.init.Xavier())
    with pytest.raises(MXNetError, match="for_training=True"):
        mod.forward_backward(_batch(x, y, 0))
