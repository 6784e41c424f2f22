"""Model parallelism under Module (`group2ctxs`): a net split over two groups trains to the
very parameters of the ungrouped net, bit for bit, on one device and with data parallelism on
top (group2ctxs as a list of dicts, one per device, or as a dict of lists), through the fused
flat update and the per-parameter one, with every kvstore kind, and under BucketingModule.
The parameters live on their groups' devices, one flat buffer per device."""
import numpy as np
import pytest

import minimod as mx

from ..executor.test_group2ctx import two_group_mlp

BATCH, FEATURES = 8, 7
ONE = {"dev1": mx.cpu(1), "dev2": mx.cpu(2)}
TWO_LIST = [{"dev1": mx.cpu(2), "dev2": mx.cpu(3)}, {"dev1": mx.cpu(4), "dev2": mx.cpu(5)}]
TWO_DICT = {"dev1": [mx.cpu(2), mx.cpu(4)], "dev2": mx.cpu(3)}


def _data(batches=4, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, (batches * BATCH, FEATURES)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32) + (x[:, 1] > 0.3).astype(np.float32)
    return x, y


def _initial(sym):
    rng = np.random.RandomState(1)
    shapes, _, aux_shapes = sym.infer_shape(data=(BATCH, FEATURES))
    args = {n: mx.nd.array(rng.uniform(-0.5, 0.5, s))
            for n, s in zip(sym.list_arguments(), shapes) if n not in ("data", "softmax_label")}
    aux = {n: mx.nd.array(rng.uniform(0.5, 1, s))
           for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    return args, aux


def _host(params: dict) -> dict:
    return {k: v.asnumpy() for k, v in params.items()}


def _module(context, group2ctxs, optimizer, kvstore):
    sym = two_group_mlp()
    mod = mx.mod.Module(sym, context=context, group2ctxs=group2ctxs)
    mod.bind(data_shapes=[("data", (BATCH, FEATURES))],
             label_shapes=[("softmax_label", (BATCH,))])
    args, aux = _initial(sym)
    mod.init_params(arg_params=args, aux_params=aux)
    mod.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                       optimizer_params={"learning_rate": 0.1, "wd": 1e-3,
                                         **({"momentum": 0.9} if optimizer == "sgd" else {})})
    return mod


def _train(context, group2ctxs, optimizer="sgd", kvstore="local", steps=4):
    """forward, backward and update on fixed batches: (module, params after `steps`)."""
    mod = _module(context, group2ctxs, optimizer, kvstore)
    x, y = _data()
    for step in range(steps):
        part = slice((step % 4) * BATCH, (step % 4 + 1) * BATCH)
        mod.forward(mx.io.DataBatch([mx.nd.array(x[part])], [mx.nd.array(y[part])]),
                    is_train=True)
        mod.backward()
        mod.update()
    args, aux = mod.get_params()
    return mod, {**_host(args), **_host(aux)}


def _assert_same(got: dict, want: dict):
    assert set(got) == set(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


@pytest.mark.parametrize("optimizer", ["sgd", "nadam"], ids=["flat-update", "per-parameter"])
def test_one_device_trains_as_the_ungrouped_net(optimizer):
    mod, got = _train(mx.cpu(0), ONE, optimizer)
    _, want = _train(mx.cpu(0), None, optimizer)
    _assert_same(got, want)
    # one flat buffer per device: the fused update steps each (Nadam's update is not fused:
    # it runs parameter by parameter)
    assert [str(b.copies[0].ctx) for b in mod._update_plan.buffers] == ["cpu(1)", "cpu(2)"]
    assert mod._updater.flat_capable(False) == (optimizer == "sgd")


@pytest.mark.parametrize("group2ctxs", [TWO_LIST, TWO_DICT], ids=["list", "dict"])
@pytest.mark.parametrize("kvstore", ["local", "device"])
@pytest.mark.parametrize("optimizer", ["sgd", "nadam"], ids=["flat-update", "per-parameter"])
def test_two_data_parallel_devices_train_as_the_ungrouped_net(group2ctxs, kvstore, optimizer):
    contexts = [mx.cpu(0), mx.cpu(1)]
    mod, got = _train(contexts, group2ctxs, optimizer, kvstore)
    _, want = _train(contexts, None, optimizer, kvstore)
    _assert_same(got, want)
    assert len(mod._update_plan.buffers) == 2  # a buffer per group, summed over the devices


@pytest.mark.parametrize("optimizer", ["sgd", "nadam"], ids=["flat-update", "per-parameter"])
def test_updating_on_the_devices_trains_as_the_ungrouped_net(optimizer, monkeypatch):
    """MXNET_UPDATE_ON_KVSTORE=0: the store sums the gradients, each device updates its own
    parameters, wherever their groups put them."""
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    contexts = [mx.cpu(0), mx.cpu(1)]
    mod, got = _train(contexts, TWO_LIST, optimizer, "local")
    _, want = _train(contexts, None, optimizer, "local")
    assert not mod._update_on_kvstore
    _assert_same(got, want)


def test_parameters_live_on_their_groups_devices_in_one_buffer_per_device():
    mod = _module([mx.cpu(0), mx.cpu(1)], TWO_LIST, "sgd", "local")
    group = mod._exec_group
    for name, copies in zip(group.param_names, group.param_arrays):
        want = [g["dev1" if name.startswith(("fc1", "bn1")) else "dev2"] for g in TWO_LIST]
        assert [a.context for a in copies] == want, name
        assert [g.context for g in group.grad_arrays[group.param_names.index(name)]] == want
    for k, exe in enumerate(group.execs):
        assert sorted(str(f.ctx) for f in exe.flat_params) == sorted(
            str(c) for c in TWO_LIST[k].values())
        assert exe.aux_dict["bn1_moving_mean"].context == TWO_LIST[k]["dev1"]


def test_fit_trains_as_the_ungrouped_net():
    x, y = _data()

    def fit(group2ctxs):
        sym = two_group_mlp()
        mod = mx.mod.Module(sym, context=[mx.cpu(0), mx.cpu(1)], group2ctxs=group2ctxs)
        args, aux = _initial(sym)
        train = mx.io.NDArrayIter(x, y, batch_size=BATCH)
        mod.fit(train, num_epoch=2, arg_params=args, aux_params=aux, kvstore="device",
                optimizer="adam", optimizer_params={"learning_rate": 0.01})
        got_args, got_aux = mod.get_params()
        return {**_host(got_args), **_host(got_aux)}, mod.score(train, "acc")

    (got, got_score), (want, want_score) = fit(TWO_LIST), fit(None)
    _assert_same(got, want)
    assert got_score == want_score


def _bucket_sym(seq_len):
    """An unrolled net whose first half is group dev1 and second half dev2, sharing weights."""
    with mx.name.NameManager():
        net = mx.sym.Variable("data")
        with mx.AttrScope(ctx_group="dev1"):
            w1, b1 = mx.sym.Variable("w1_weight"), mx.sym.Variable("b1_bias")
            for i in range(seq_len):
                net = mx.sym.FullyConnected(net, weight=w1, bias=b1, num_hidden=FEATURES,
                                            name="a%d" % i)
                net = mx.sym.Activation(net, act_type="tanh")
        with mx.AttrScope(ctx_group="dev2"):
            w2, b2 = mx.sym.Variable("w2_weight"), mx.sym.Variable("b2_bias")
            for i in range(seq_len):
                net = mx.sym.FullyConnected(net, weight=w2, bias=b2, num_hidden=FEATURES,
                                            name="b%d" % i)
            net = mx.sym.FullyConnected(net, num_hidden=3, name="out")
            net = mx.sym.SoftmaxOutput(net, name="softmax")
    return net, ("data",), ("softmax_label",)


def test_bucketing_module_trains_as_the_ungrouped_net():
    x, y = _data()

    def train(group2ctxs):
        mod = mx.mod.BucketingModule(_bucket_sym, default_bucket_key=3,
                                     context=[mx.cpu(0), mx.cpu(1)], group2ctxs=group2ctxs)
        mod.bind(data_shapes=[("data", (BATCH, FEATURES))],
                 label_shapes=[("softmax_label", (BATCH,))])
        mod.init_params(initializer=mx.init.Xavier(rnd_type="gaussian", magnitude=1))
        mod.init_optimizer(kvstore="local", optimizer="sgd",
                           optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
        for step, key in enumerate([3, 1, 2, 3, 2]):
            part = slice((step % 4) * BATCH, (step % 4 + 1) * BATCH)
            mod.forward(mx.io.DataBatch([mx.nd.array(x[part])], [mx.nd.array(y[part])],
                                        bucket_key=key,
                                        provide_data=[("data", (BATCH, FEATURES))],
                                        provide_label=[("softmax_label", (BATCH,))]),
                        is_train=True)
            mod.backward()
            mod.update()
        return mod, _host(mod.get_params()[0])

    mx.random.seed(7)
    mod, got = train(TWO_LIST)
    mx.random.seed(7)
    _, want = train(None)
    _assert_same(got, want)
    for bucket in mod._buckets.values():
        exe = bucket._exec_group.execs[1]
        assert exe.arg_dict["w1_weight"].context == mx.cpu(4)
        assert exe.arg_dict["w2_weight"].context == mx.cpu(5)
        assert exe.outputs[0].context == mx.cpu(5)
