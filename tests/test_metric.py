"""Metrics replay MXNet 1.9.1's recorded values (tests/data/metric) and keep their contracts."""
import json
import math
import os
import sys
from collections import OrderedDict

import numpy as np
import pytest

import minimod as mx
from minimod import metric

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "metric")
sys.path.insert(0, HERE)
import metric_cases  # noqa: E402

with open(os.path.join(HERE, "metric_golden.json")) as _f:
    GOLDEN = json.load(_f)


def _close(got, want, where):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (where, got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            _close(g, w, "%s[%d]" % (where, i))
    elif isinstance(want, str) or want is None:
        assert got == want, (where, got, want)
    else:
        assert got == pytest.approx(want, rel=1e-6, abs=1e-9), (where, got, want)


@pytest.mark.parametrize("name", sorted(metric_cases.CASES))
def test_replays_mxnet(name):
    got = metric_cases.run_case(mx, metric_cases.CASES[name])
    want = GOLDEN["cases"][name]
    assert len(got) == len(want)
    for step, (g, w) in enumerate(zip(got, want)):
        assert sorted(g) == sorted(w)
        for key in w:
            _close(g[key], w[key], "%s step %d %s" % (name, step, key))


def test_names_configs_and_messages_match_mxnet():
    got = metric_cases.errors(mx)
    want = GOLDEN["errors"]
    for key, value in want.items():
        if key.startswith("count_") or key in ("f1_multiclass", "shape_true"):
            assert got[key].startswith(value), key
        else:
            assert got[key] == value, key


def test_counts_are_exact_integers_in_float64():
    acc = metric.Accuracy()
    label = mx.nd.array(np.array([0, 1, 2, 1], dtype=np.float32))
    pred = mx.nd.array(np.eye(3, dtype=np.float32)[[0, 1, 1, 1]])
    for _ in range(3):
        acc.update([label], [pred])
    assert acc.num_inst == 12 and acc.sum_metric == 9.0
    assert isinstance(acc.get()[1], float) and acc.get()[1] == 0.75


def test_subclass_written_for_mxnet_still_works():
    class Count(metric.EvalMetric):
        def __init__(self):
            super().__init__("count")

        def update(self, labels, preds):
            for pred in preds:
                self.sum_metric += pred.asnumpy().sum()
                self.num_inst += pred.shape[0]

    m = Count()
    m.update([None], [mx.nd.ones((4, 2))])
    assert m.get() == ("count", 2.0)
    m.reset()
    assert math.isnan(m.get()[1])


def test_update_dict_filters_by_names():
    acc = metric.Accuracy(output_names=["softmax_output"], label_names=["softmax_label"])
    preds = OrderedDict([("softmax_output", mx.nd.array(np.eye(3, dtype=np.float32))),
                         ("blockgrad0_output", mx.nd.zeros((3, 7)))])
    labels = OrderedDict([("softmax_label", mx.nd.array(np.arange(3, dtype=np.float32)))])
    acc.update_dict(labels, preds)
    assert acc.get() == ("accuracy", 1.0)


def test_mismatch_message_names_the_pairing():
    acc = metric.create("acc")
    preds = OrderedDict([("softmax_output", mx.nd.zeros((3, 3))),
                         ("blockgrad0_output", mx.nd.zeros((3, 7)))])
    labels = OrderedDict([("softmax_label", mx.nd.zeros((3,)))])
    with pytest.raises(ValueError) as info:
        acc.update_dict(labels, preds)
    message = str(info.value)
    assert message.startswith("Shape of labels 1 does not match shape of predictions 2")
    for name in ("softmax_label", "softmax_output", "blockgrad0_output", "output_names"):
        assert name in message
    comp = metric.create(["acc", "ce"])
    with pytest.raises(ValueError, match="blockgrad0_output"):
        comp.update_dict(labels, preds)


def test_registry_create_and_aliases():
    for name in ("acc", "accuracy", "ce", "crossentropy", "f1", "mcc", "mae", "mse", "rmse",
                 "loss", "nll_loss", "negativeloglikelihood", "pearsonr",
                 "pearsoncorrelation", "pcc", "torch", "caffe", "composite",
                 "compositeevalmetric"):
        assert isinstance(metric.create(name.upper()), metric.EvalMetric)
    assert isinstance(metric.create("perplexity", ignore_label=None), metric.Perplexity)
    for name in ("top_k_acc", "top_k_accuracy", "topkaccuracy"):
        assert metric.create(name, top_k=2).name == "top_k_accuracy_2"
    assert isinstance(metric.create("custommetric", lambda a, b: 0.0), metric.CustomMetric)
    acc = metric.Accuracy()
    assert metric.create(acc) is acc
    rebuilt = metric.create(metric.create("acc", axis=2, name="x").get_config())
    assert isinstance(rebuilt, metric.Accuracy) and rebuilt.axis == 2 and rebuilt.name == "x"
    with pytest.raises(AssertionError, match="not registered"):
        metric.create("nope")
    with pytest.raises(AssertionError):
        metric.create("top_k_acc", top_k=1)
    with pytest.raises(NotImplementedError):
        metric.create(lambda a, b: 0.0).get_config()


def test_register_and_alias_decorators():
    @metric.register
    @metric.alias("my_metric_alias")
    class MyMetric(metric.EvalMetric):
        def __init__(self, name="mine"):
            super().__init__(name)

    assert isinstance(metric.create("mymetric"), MyMetric)
    assert isinstance(metric.create("MY_METRIC_ALIAS"), MyMetric)
    with pytest.warns(UserWarning, match="overriding"):
        metric.register(MyMetric)


def test_composite_get_metric_and_add():
    comp = metric.CompositeEvalMetric(metrics=["acc"])
    comp.add("mse")
    assert isinstance(comp.get_metric(1), metric.MSE)
    assert isinstance(comp.get_metric(5), ValueError)
    assert comp.get()[0] == ["accuracy", "mse"]


def test_local_and_global_reset():
    acc = metric.Accuracy()
    label = mx.nd.array(np.array([0, 1], dtype=np.float32))
    acc.update([label], [mx.nd.array(np.eye(2, dtype=np.float32))])
    acc.reset_local()
    acc.update([label], [mx.nd.array(np.eye(2, dtype=np.float32)[::-1].copy())])
    assert acc.get()[1] == 0.0 and acc.get_global()[1] == 0.5
    acc.reset()
    assert math.isnan(acc.get_global()[1])


def test_labels_moved_to_the_prediction_device():
    """Labels on another CPU context are compared with the prediction without error."""
    acc = metric.Accuracy()
    label = mx.nd.array(np.array([0, 1], dtype=np.float32), ctx=mx.cpu(1))
    acc.update([label], [mx.nd.array(np.eye(2, dtype=np.float32))])
    assert acc.get()[1] == 1.0


def test_update_does_not_bring_values_to_the_host(monkeypatch):
    """Built-in metrics accumulate without asnumpy; only get() reads the sums."""
    calls = []
    original = mx.nd.NDArray.asnumpy

    def counting(self):
        calls.append(self.shape)
        return original(self)

    monkeypatch.setattr(mx.nd.NDArray, "asnumpy", counting)
    rng = np.random.RandomState(0)
    label = mx.nd.array(rng.randint(0, 4, size=16).astype(np.float32))
    pred = mx.nd.array(rng.rand(16, 4).astype(np.float32))
    for name, kw in [("acc", {}), ("top_k_acc", {"top_k": 2}), ("ce", {}), ("nll_loss", {}),
                     ("mae", {}), ("mse", {}), ("rmse", {}), ("loss", {}),
                     ("perplexity", {"ignore_label": 0}), ("pearsonr", {})]:
        m = metric.create(name, **kw)
        lab = label if name not in ("mae", "mse", "rmse", "pearsonr") else pred
        m.update([lab], [pred])
        m.get()
    assert calls == []


@pytest.mark.skipif(mx.num_gpus() == 0, reason="needs a GPU")
def test_gpu_matches_cpu():
    rng = np.random.RandomState(3)
    label = rng.randint(0, 5, size=32).astype(np.float32)
    pred = rng.rand(32, 5).astype(np.float32)
    for name, kw in [("acc", {}), ("top_k_acc", {"top_k": 3}), ("ce", {}), ("mse", {}),
                     ("perplexity", {"ignore_label": 1}), ("loss", {}), ("pcc", {}),
                     ("f1", {}), ("pearsonr", {})]:
        values = []
        for ctx in (mx.cpu(), mx.gpu()):
            m = metric.create(name, **kw)
            if name == "f1":
                lab, prd = label % 2, pred[:, :2]
            elif name in ("mse", "pearsonr"):
                lab, prd = pred, pred[::-1].copy()
            else:
                lab, prd = label, pred
            m.update([mx.nd.array(lab)], [mx.nd.array(prd, ctx=ctx)])
            values.append(m.get()[1])
        assert values[1] == pytest.approx(values[0], rel=1e-5), name


def test_top_k_with_1d_predictions_counts_locally_only():
    """MXNet's quirk, kept: 1-D predictions add to the local sum but not the global one."""
    m = metric.TopKAccuracy(top_k=2)
    pred = mx.nd.array(np.array([0.1, 0.9, 0.5], dtype=np.float32))
    m.update([mx.nd.array(np.array([9, 9, 9], dtype=np.float32))], [pred])
    assert m.num_inst == 3 and m.global_num_inst == 3
    assert m.global_sum_metric == 0.0


@pytest.mark.parametrize("args", [("acc",), ("f1",), ("perplexity", -1), ("nll_loss",),
                                  (["acc", "mae"],)])
def test_create_takes_the_json_text_of_a_config(args):
    original = mx.metric.create(*args)
    rebuilt = mx.metric.create(json.dumps(original.get_config()))
    assert type(rebuilt) is type(original)
    assert rebuilt.get_config() == original.get_config()


def test_create_names_bad_json_config():
    with pytest.raises(ValueError, match="not valid JSON"):
        mx.metric.create('{"metric": "Accuracy",')
