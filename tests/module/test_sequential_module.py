"""SequentialModule: a chain of Modules must train exactly like one Module holding the composite
symbol with the same parameters; meta keys, state flags and errors."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError

BATCH = 8
RTOL, ATOL = 1e-5, 1e-6


def _first(data):
    net = mx.sym.FullyConnected(data, num_hidden=12, name="fc1")
    return mx.sym.Activation(net, act_type="relu", name="relu1")


def _second(data):
    net = mx.sym.FullyConnected(data, num_hidden=10, name="fc2")
    return mx.sym.Activation(net, act_type="tanh", name="tanh2")


def _third(data):
    net = mx.sym.FullyConnected(data, num_hidden=4, name="fc3")
    return mx.sym.SoftmaxOutput(net, name="softmax")


SHAPES = {"fc1_weight": (12, 6), "fc1_bias": (12,), "fc2_weight": (10, 12), "fc2_bias": (10,),
          "fc3_weight": (4, 10), "fc3_bias": (4,)}


def _params(seed=0, shapes=SHAPES):
    rng = np.random.RandomState(seed)
    return {k: mx.nd.array(rng.uniform(-0.5, 0.5, size=s)) for k, s in sorted(shapes.items())}


def _data(n_batches=3, seed=1, batch=BATCH):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, size=(n_batches * batch, 6)).astype(np.float32)
    y = rng.randint(0, 4, size=(n_batches * batch,)).astype(np.float32)
    return [mx.io.DataBatch([mx.nd.array(x[i * batch:(i + 1) * batch])],
                            [mx.nd.array(y[i * batch:(i + 1) * batch])])
            for i in range(n_batches)]


def _chain3(context=None):
    """data -> [fc1 relu] -(auto_wiring)-> [fc2 tanh] -(by name)-> [fc3 softmax, labels]."""
    context = context or mx.cpu()
    seq = mx.mod.SequentialModule()
    (seq.add(mx.mod.Module(_first(mx.sym.Variable("data")), label_names=None, context=context))
        .add(mx.mod.Module(_second(mx.sym.Variable("hidden")), data_names=("hidden",),
                           label_names=None, context=context), auto_wiring=True)
        .add(mx.mod.Module(_third(mx.sym.Variable("tanh2_output")),
                           data_names=("tanh2_output",), context=context), take_labels=True))
    return seq


def _single(context=None):
    sym = _third(_second(_first(mx.sym.Variable("data"))))
    return mx.mod.Module(sym, context=context or mx.cpu())


def _ready(mod, inputs_need_grad=True, optimizer_params=None):
    mod.bind(data_shapes=[("data", (BATCH, 6))], label_shapes=[("softmax_label", (BATCH,))],
             inputs_need_grad=inputs_need_grad)
    mod.init_params(arg_params=_params(), aux_params={})
    mod.init_optimizer(optimizer="sgd", optimizer_params=optimizer_params or {
        "learning_rate": 0.3, "momentum": 0.9, "wd": 1e-3})
    return mod


def _assert_close(a, b, what):
    np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=RTOL, atol=ATOL, err_msg=what)


@pytest.mark.parametrize("contexts", [None, [mx.cpu(0), mx.cpu(1)]], ids=["one", "two_devices"])
def test_chain_trains_like_the_composite_module(contexts):
    seq, single = _ready(_chain3(contexts)), _ready(_single(contexts))
    for i, batch in enumerate(_data()):
        for mod in (seq, single):
            mod.forward(batch, is_train=True)
            mod.backward()
        _assert_close(seq.get_outputs()[0], single.get_outputs()[0], "output %d" % i)
        _assert_close(seq.get_input_grads()[0], single.get_input_grads()[0], "dx %d" % i)
        for mod in (seq, single):
            mod.update()
    seq_args, seq_aux = seq.get_params()
    single_args, _ = single.get_params()
    assert sorted(seq_args) == sorted(single_args) and seq_aux == {}
    for name in single_args:
        _assert_close(seq_args[name], single_args[name], name)
    assert not np.allclose(seq_args["fc1_weight"].asnumpy(), _params()["fc1_weight"].asnumpy())


def test_aux_states_are_merged_and_match():
    def first(data):
        net = mx.sym.FullyConnected(data, num_hidden=12, name="fc1")
        net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn1")
        return mx.sym.Activation(net, act_type="relu", name="relu1")

    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(first(mx.sym.Variable("data")), label_names=None))
    seq.add(mx.mod.Module(_third(mx.sym.Variable("x")), data_names=("x",)),
            auto_wiring=True, take_labels=True)
    single = mx.mod.Module(_third(first(mx.sym.Variable("data"))))
    shapes = {"fc1_weight": (12, 6), "fc1_bias": (12,), "bn1_gamma": (12,), "bn1_beta": (12,),
              "fc3_weight": (4, 12), "fc3_bias": (4,)}
    aux = {"bn1_moving_mean": mx.nd.zeros((12,)), "bn1_moving_var": mx.nd.ones((12,))}
    for mod in (seq, single):
        mod.bind(data_shapes=[("data", (BATCH, 6))], label_shapes=[("softmax_label", (BATCH,))])
        mod.init_params(arg_params=_params(3, shapes), aux_params=aux)
        mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    for batch in _data():
        for mod in (seq, single):
            mod.forward_backward(batch)
            mod.update()
    (seq_args, seq_aux), (single_args, single_aux) = seq.get_params(), single.get_params()
    assert sorted(seq_aux) == ["bn1_moving_mean", "bn1_moving_var"]
    for name in single_args:
        _assert_close(seq_args[name], single_args[name], name)
    for name in single_aux:
        _assert_close(seq_aux[name], single_aux[name], name)


def test_fit_matches_the_composite_module():
    rng = np.random.RandomState(5)
    x = rng.uniform(-1, 1, size=(32, 6)).astype(np.float32)
    y = rng.randint(0, 4, size=(32,)).astype(np.float32)
    results = []
    for mod in (_chain3(), _single()):
        train = mx.io.NDArrayIter(x, y, batch_size=BATCH, shuffle=False)
        mod.fit(train, num_epoch=2, arg_params=_params(), optimizer="sgd",
                optimizer_params={"learning_rate": 0.2, "momentum": 0.5})
        score = mod.score(mx.io.NDArrayIter(x, y, batch_size=BATCH), "acc")
        prediction = mod.predict(mx.io.NDArrayIter(x, y, batch_size=BATCH))
        results.append((mod.get_params()[0], score, prediction))
    (seq_args, seq_score, seq_pred), (args, score, pred) = results
    for name in args:
        _assert_close(seq_args[name], args[name], name)
    assert [n for n, _ in seq_score] == [n for n, _ in score]
    assert [v for _, v in seq_score] == pytest.approx([v for _, v in score])
    _assert_close(seq_pred, pred, "predict")


def test_forward_with_a_new_batch_size_reshapes_every_module():
    seq, single = _ready(_chain3()), _ready(_single())
    x = mx.nd.array(np.random.RandomState(2).uniform(-1, 1, size=(3, 6)))
    for mod in (seq, single):
        mod.forward(mx.io.DataBatch([x], provide_data=[mx.io.DataDesc("data", (3, 6))]),
                    is_train=False)
    assert seq.get_outputs()[0].shape == (3, 4)
    _assert_close(seq.get_outputs()[0], single.get_outputs()[0], "output")


def test_labels_go_only_to_take_labels_modules():
    seq = _chain3()
    seq.bind(data_shapes=[("data", (BATCH, 6))], label_shapes=[("softmax_label", (BATCH,))])
    assert seq._modules[0].label_shapes is None and seq._modules[1].label_shapes is None
    assert [d.name for d in seq._modules[2].label_shapes] == ["softmax_label"]
    assert [d.name for d in seq._modules[1].data_shapes] == ["hidden"]
    assert [d.name for d in seq._modules[2].data_shapes] == ["tanh2_output"]
    assert seq.label_shapes == [("softmax_label", (BATCH,))]

    no_labels = mx.mod.SequentialModule().add(mx.mod.Module(_first(mx.sym.Variable("data")),
                                                            label_names=None))
    no_labels.bind(data_shapes=[("data", (BATCH, 6))], label_shapes=[("softmax_label", (BATCH,))])
    assert no_labels.label_shapes is None


def test_update_metric_uses_only_take_labels_modules():
    seq, single = _ready(_chain3()), _ready(_single())
    seq_metric, single_metric = mx.metric.create("acc"), mx.metric.create("acc")
    for batch in _data():
        for mod, metric in ((seq, seq_metric), (single, single_metric)):
            mod.forward(batch, is_train=False)
            mod.update_metric(metric, batch.label)
    assert seq_metric.num_inst == single_metric.num_inst == 3 * BATCH
    assert seq_metric.get() == single_metric.get()


def test_layers_after_the_first_need_input_grads_only_when_training():
    seq = _chain3()
    seq.bind(data_shapes=[("data", (BATCH, 6))], label_shapes=[("softmax_label", (BATCH,))])
    assert [m.inputs_need_grad for m in seq._modules] == [False, True, True]
    assert not seq.inputs_need_grad
    seq.bind(data_shapes=[("data", (BATCH, 6))], for_training=False, force_rebind=True)
    assert [m.inputs_need_grad for m in seq._modules] == [False, False, False]
    assert [m.for_training for m in seq._modules] == [False, False, False]


def test_properties():
    empty = mx.mod.SequentialModule()
    assert empty.data_names == [] and empty.output_names == []
    seq = _chain3()
    assert seq.data_names == ["data"] and seq.output_names == ["softmax_output"]
    assert seq.symbol is None
    seq.bind(data_shapes=[("data", (BATCH, 6))], label_shapes=[("softmax_label", (BATCH,))])
    assert [tuple(d) for d in seq.data_shapes] == [("data", (BATCH, 6))]
    assert [tuple(d) for d in seq.output_shapes] == [("softmax_output", (BATCH, 4))]


def test_state_flags():
    seq = _chain3()
    assert not (seq.binded or seq.params_initialized or seq.optimizer_initialized)
    _ready(seq)
    assert seq.binded and seq.params_initialized and seq.optimizer_initialized
    assert seq.for_training and seq.inputs_need_grad
    assert seq.add(mx.mod.Module(mx.sym.Variable("softmax_output") * 2,
                                 data_names=("softmax_output",), label_names=None)) is seq
    assert not (seq.binded or seq.params_initialized or seq.optimizer_initialized)


def test_set_params_roundtrip_and_merged_get_params():
    seq = _chain3()
    seq.bind(data_shapes=[("data", (BATCH, 6))], label_shapes=[("softmax_label", (BATCH,))])
    seq.init_params(initializer=mx.init.Uniform(0.1))
    wanted = _params(9)
    seq.set_params(wanted, {})
    args, aux = seq.get_params()
    assert sorted(args) == sorted(SHAPES) and aux == {}
    for name, value in wanted.items():
        _assert_close(args[name], value, name)
    assert sorted(seq._modules[1].get_params()[0]) == ["fc2_bias", "fc2_weight"]


def test_install_monitor_reaches_every_module():
    class Recorder:
        def __init__(self):
            self.executors = []

        def install(self, exe):
            self.executors.append(exe)

    seq = _chain3([mx.cpu(0), mx.cpu(1)])
    seq.bind(data_shapes=[("data", (BATCH, 6))], label_shapes=[("softmax_label", (BATCH,))])
    recorder = Recorder()
    seq.install_monitor(recorder)
    assert len(recorder.executors) == 6


def test_already_bound_warns(caplog):
    seq = _chain3()
    seq.bind(data_shapes=[("data", (BATCH, 6))], label_shapes=[("softmax_label", (BATCH,))])
    with caplog.at_level(logging.WARNING):
        seq.bind(data_shapes=[("data", (BATCH, 6))])
    assert "Already bound" in caplog.text


# ---------------------------------------------------------------------------------- errors

def test_unknown_meta_is_refused_and_not_added():
    seq = mx.mod.SequentialModule()
    with pytest.raises(ValueError, match="take_label"):
        seq.add(mx.mod.Module(_first(mx.sym.Variable("data")), label_names=None),
                take_label=True)
    assert seq._modules == [] and seq._metas == []


def test_bind_errors():
    with pytest.raises(MXNetError, match="empty"):
        mx.mod.SequentialModule().bind(data_shapes=[("data", (BATCH, 6))])
    seq = _chain3()
    with pytest.raises(MXNetError, match="shared_module"):
        seq.bind(data_shapes=[("data", (BATCH, 6))], shared_module=_chain3())
    with pytest.raises(MXNetError, match="for_training"):
        seq.bind(data_shapes=[("data", (BATCH, 6))], for_training=False, inputs_need_grad=True)
    assert not seq.binded


def test_wiring_errors_name_the_layer():
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(_first(mx.sym.Variable("data")), label_names=None))
    seq.add(mx.mod.Module(_second(mx.sym.Variable("hidden")), data_names=("hidden",),
                          label_names=None))
    with pytest.raises(MXNetError, match="layer 1 .*auto_wiring=True"):
        seq.bind(data_shapes=[("data", (BATCH, 6))])

    two_inputs = mx.sym.Variable("a") + mx.sym.Variable("b")
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(_first(mx.sym.Variable("data")), label_names=None))
    seq.add(mx.mod.Module(two_inputs, data_names=("a", "b"), label_names=None), auto_wiring=True)
    with pytest.raises(MXNetError, match="takes 2 data inputs"):
        seq.bind(data_shapes=[("data", (BATCH, 6))])


def test_duplicated_parameter_names_are_named():
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(_first(mx.sym.Variable("data")), label_names=None))
    seq.add(mx.mod.Module(_first(mx.sym.Variable("x")), data_names=("x",), label_names=None),
            auto_wiring=True)
    seq.bind(data_shapes=[("data", (BATCH, 12))])
    with pytest.raises(MXNetError, match="fc1_bias.*layer 1.*layer 0") as err:
        seq.init_params()
    assert "fc1_weight" in str(err.value)
    assert not seq.params_initialized


def test_calls_out_of_order():
    seq = _chain3()
    batch = _data(1)[0]
    with pytest.raises(MXNetError, match="bind"):
        seq.init_params()
    with pytest.raises(MXNetError, match="not bound"):
        _ = seq.output_shapes
    seq.bind(data_shapes=[("data", (BATCH, 6))], label_shapes=[("softmax_label", (BATCH,))])
    for call in (lambda: seq.forward(batch), seq.backward, seq.get_outputs, seq.get_params,
                 lambda: seq.init_optimizer()):
        with pytest.raises(MXNetError, match="init_params"):
            call()
    seq.init_params()
    with pytest.raises(MXNetError, match="not a list"):
        seq.forward([batch])
    with pytest.raises(MXNetError, match="init_optimizer"):
        seq.update()
    with pytest.raises(MXNetError, match="inputs_need_grad"):
        seq.get_input_grads()
