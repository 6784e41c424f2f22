"""Metric scenarios run identically under MXNet 1.9.1 and minimod (`run_case(mx, case)`).

gen_metric_golden.py records what MXNet reports after every step of every case;
tests/test_metric.py replays the cases under minimod and demands the same numbers.
Inputs come from `numpy.random.RandomState`, whose streams are the same in NumPy 1.x and 2.x.
"""
import math

import numpy as np


def _probs(rng, n, k):
    x = rng.rand(n, k).astype(np.float32) + 0.05
    return (x / x.sum(axis=1, keepdims=True)).astype(np.float32)


def _labels(rng, n, k, dtype=np.float32):
    return rng.randint(0, k, size=n).astype(dtype)


def _classif(seed, n, k, updates, outputs=1):
    rng = np.random.RandomState(seed)
    return [([_labels(rng, n, k) for _ in range(outputs)],
             [_probs(rng, n, k) for _ in range(outputs)]) for _ in range(updates)]


def _regress(seed, label_shape, pred_shape, updates):
    rng = np.random.RandomState(seed)
    return [([rng.randn(*label_shape).astype(np.float32)],
             [rng.randn(*pred_shape).astype(np.float32)]) for _ in range(updates)]


def custom_acc(label, pred):
    return float((pred.argmax(axis=1) == label).mean())


def custom_pair(label, pred):
    return float(np.abs(label - pred[:, 0]).sum()), label.shape[0]


def custom_np32(label, pred):
    return np.float32(pred.sum() / 7.0)


def _steps(batches, reset_after=()):
    steps = []
    for i, batch in enumerate(batches):
        steps.append(batch)
        if i in reset_after:
            steps.append("reset_local")
    return steps


def _cases():
    rng = np.random.RandomState(7)
    same_shape = [([_labels(rng, 9, 4)], [rng.randint(0, 4, size=9).astype(np.float32)
                                          + rng.rand(9).astype(np.float32) * 0.9])
                  for _ in range(2)]
    seq = [([_labels(rng, 12, 5).reshape(3, 4)],
            [_probs(rng, 12, 5).reshape(3, 4, 5)]) for _ in range(2)]
    axis0 = [([_labels(rng, 8, 5)], [_probs(rng, 8, 5).T.copy()]) for _ in range(2)]
    binary = _classif(11, 16, 2, 3)
    binary_multi = _classif(12, 10, 2, 2, outputs=2)
    ignore = _classif(13, 20, 6, 3)
    for labels, _ in ignore:
        labels[0][::3] = 0.0
    pcc_batches = []
    for k in (3, 5, 4):
        labels = _labels(rng, 15, k).astype(np.float32)
        pcc_batches.append(([labels], [_probs(rng, 15, 3)]))
    loss_batches = [([rng.rand(6).astype(np.float32)], [rng.rand(6, 2).astype(np.float32)])
                    for _ in range(3)]
    # (1-D predictions to TopKAccuracy are left out: MXNet compares argpartition's order,
    # which NumPy does not specify.)
    return {
        "acc": (("acc",), {}, _steps(_classif(1, 10, 5, 3), reset_after=(1,))),
        "accuracy_multi_output": (("accuracy",), {}, _steps(_classif(2, 7, 3, 2, outputs=2))),
        "acc_same_shape": (("acc",), {}, _steps(same_shape)),
        "acc_axis2": (("acc",), {"axis": 2}, _steps(seq)),
        "acc_axis0": (("acc",), {"axis": 0}, _steps(axis0)),
        "acc_named": (("acc",), {"name": "my-acc"}, _steps(_classif(3, 5, 3, 1))),
        "top_k_acc_3": (("top_k_acc",), {"top_k": 3},
                        _steps(_classif(4, 12, 7, 3), reset_after=(0,))),
        "top_k_accuracy_2": (("top_k_accuracy",), {"top_k": 2}, _steps(_classif(5, 9, 4, 2))),
        "f1_macro": (("f1",), {}, _steps(binary, reset_after=(1,))),
        "f1_micro": (("f1",), {"average": "micro"}, _steps(binary, reset_after=(1,))),
        "f1_multi": (("f1",), {}, _steps(binary_multi)),
        "mcc_macro": (("mcc",), {}, _steps(binary, reset_after=(1,))),
        "mcc_micro": (("mcc",), {"average": "micro"}, _steps(binary, reset_after=(1,))),
        "perplexity": (("perplexity",), {"ignore_label": None},
                       _steps(_classif(6, 10, 5, 3), reset_after=(1,))),
        "perplexity_ignore": (("perplexity",), {"ignore_label": 0}, _steps(ignore)),
        "perplexity_multi": (("perplexity",), {"ignore_label": None},
                             _steps(_classif(8, 6, 4, 2, outputs=2))),
        "mae_1d": (("mae",), {}, _steps(_regress(20, (10,), (10, 1), 3), reset_after=(1,))),
        "mse_2d": (("mse",), {}, _steps(_regress(21, (10, 3), (10, 3), 3))),
        "rmse_1d": (("rmse",), {}, _steps(_regress(22, (10,), (10,), 3))),
        "rmse_broadcast": (("rmse",), {}, _steps(_regress(23, (6,), (6, 2), 2))),
        "mse_multi": (("mse",), {}, _steps([(a + c, b + d) for (a, b), (c, d) in zip(
            _regress(24, (5,), (5, 1), 2), _regress(25, (5, 2), (5, 2), 2))])),
        "ce": (("ce",), {}, _steps(_classif(30, 11, 6, 3), reset_after=(0,))),
        "crossentropy_eps": (("crossentropy",), {"eps": 1e-3}, _steps(_classif(31, 8, 3, 2))),
        "nll_loss": (("nll_loss",), {}, _steps(_classif(32, 9, 4, 2))),
        "negativeloglikelihood": (("negativeloglikelihood",), {"eps": 0.5},
                                  _steps(_classif(33, 5, 4, 2, outputs=2))),
        "pearsonr": (("pearsonr",), {}, _steps(_regress(40, (12,), (12,), 3),
                                               reset_after=(1,))),
        "pearsoncorrelation_micro": (("pearsoncorrelation",), {"average": "micro"},
                                     _steps(_regress(41, (4, 3), (4, 3), 3))),
        "pcc": (("pcc",), {}, _steps(pcc_batches, reset_after=(1,))),
        "pcc_binary": (("pcc",), {}, _steps(_classif(42, 20, 2, 2))),
        "loss": (("loss",), {}, _steps(loss_batches, reset_after=(0,))),
        "torch": (("torch",), {}, _steps(loss_batches)),
        "caffe": (("caffe",), {"name": "caffe-loss"}, _steps(loss_batches)),
        "composite_list": ((["acc", "ce", "mse"],), {}, _steps(_classif(50, 8, 3, 3),
                                                               reset_after=(1,))),
        "composite_name": (("composite",), {}, _steps(_classif(51, 8, 3, 1))),
        "custom_value": ((custom_acc,), {}, _steps(_classif(60, 8, 3, 2))),
        "custom_pair": (("custom", custom_pair), {"name": "pair"},
                        _steps(_classif(61, 8, 3, 2))),
        "custom_lambda": ((lambda label, pred: float(pred.max()),), {},
                          _steps(_classif(62, 8, 3, 2))),
        "custom_extra": (("custom", custom_acc), {"allow_extra_outputs": True},
                         _steps([(labels[:1], preds) for labels, preds in
                                 _classif(63, 8, 3, 2, outputs=2)])),
        "np_wrapped": (("np", custom_np32), {}, _steps(_classif(64, 8, 3, 2))),
    }


CASES = _cases()


def make_metric(mx, args, kwargs):
    if args and args[0] == "custom":
        return mx.metric.CustomMetric(args[1], **kwargs)
    if args and args[0] == "np":
        return mx.metric.np(args[1], **kwargs)
    return mx.metric.create(*args, **kwargs)


def _nd(mx, arrays):
    return [mx.nd.array(a, dtype=a.dtype) for a in arrays]


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return value
    value = float(value)
    return None if math.isnan(value) else value


def snapshot(metric):
    """What a user can read off a metric, as JSON-ready values (None for NaN)."""
    record = {"get": _plain(metric.get()), "get_global": _plain(metric.get_global()),
              "name_value": _plain(metric.get_name_value()),
              "global_name_value": _plain(metric.get_global_name_value())}
    if type(metric).__name__ != "CompositeEvalMetric":
        record["num_inst"] = _plain(metric.num_inst)
        record["sum_metric"] = _plain(metric.sum_metric)
    return record


def run_case(mx, case):
    """Run one case; returns a list of snapshots, one before any update and one after each step."""
    args, kwargs, steps = case
    metric = make_metric(mx, args, kwargs)
    records = [snapshot(metric)]
    for step in steps:
        if step == "reset_local":
            metric.reset_local()
        elif step == "reset":
            metric.reset()
        else:
            labels, preds = step
            metric.update(_nd(mx, labels), _nd(mx, preds))
        records.append(snapshot(metric))
    metric.reset()
    records.append(snapshot(metric))
    return records


def errors(mx):
    """Error messages and configs MXNet gives for malformed input (compared as prefixes)."""
    out = {}
    rng = np.random.RandomState(99)
    label = [mx.nd.array(_labels(rng, 4, 3))]
    preds = [mx.nd.array(_probs(rng, 4, 3)), mx.nd.array(_probs(rng, 4, 3))]
    for name in ("acc", "ce", "mse", "f1"):
        try:
            mx.metric.create(name).update(label, preds)
        except ValueError as err:
            out["count_" + name] = str(err)
    try:
        bad = mx.nd.array(np.array([0, 1, 2, 1], dtype=np.float32))
        mx.metric.create("f1").update([bad], [mx.nd.array(_probs(rng, 4, 2))])
    except ValueError as err:
        out["f1_multiclass"] = str(err)
    try:
        mx.metric.check_label_shapes(mx.nd.zeros((2, 3)), mx.nd.zeros((3, 2)), shape=True)
    except ValueError as err:
        out["shape_true"] = str(err)
    out["config_acc"] = mx.metric.create("acc", axis=2, name="a").get_config()
    out["config_top"] = mx.metric.create("top_k_acc", top_k=4).get_config()
    out["config_ce"] = mx.metric.create("ce").get_config()
    out["config_comp"] = mx.metric.create(["acc", "mse"]).get_config()
    out["names"] = {name: mx.metric.create(name, **kw).name for name, kw in [
        ("acc", {}), ("top_k_acc", {"top_k": 5}), ("ce", {}), ("nll_loss", {}), ("mae", {}),
        ("mse", {}), ("rmse", {}), ("f1", {}), ("mcc", {}), ("perplexity", {"ignore_label": 1}),
        ("pearsonr", {}), ("pcc", {}), ("loss", {}), ("torch", {}), ("caffe", {}),
        ("composite", {})]}
    out["lambda_name"] = mx.metric.create(lambda a, b: 0.0).name
    out["str"] = str(mx.metric.create("acc"))
    return out
