"""Every built-in metric over several updates with local and global values, and the edge
cases: F1 and MCC in micro and macro averaging, Perplexity with ignore_label, top-k accuracy,
CrossEntropy / NegativeLogLikelihood with eps, PearsonCorrelation, MAE/MSE/RMSE over 2-D
labels, Loss, CustomMetric with allow_extra_outputs, a CompositeEvalMetric, reset_local."""
import numpy as np


def _batches(rng, n=4, rows=6, classes=3):
    out = []
    for _ in range(n):
        logits = rng.uniform(-2, 2, size=(rows, classes))
        prob = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        out.append((rng.randint(0, classes, size=(rows,)).astype(np.float32),
                    prob.astype(np.float32)))
    return out


def _record(metric, out, tag):
    for kind, pairs in (("local", metric.get_name_value()),
                        ("global", metric.get_global_name_value())):
        for name, value in pairs:
            out["%s/%s/%s" % (tag, kind, name)] = value


def run(mx):
    out = {}
    rng = np.random.RandomState(37)
    multi = _batches(rng)
    binary = _batches(rng, classes=2)
    regression = [(rng.uniform(-1, 1, (5, 2)).astype(np.float32),
                   rng.uniform(-1, 1, (5, 2)).astype(np.float32)) for _ in range(3)]
    metrics = {
        "acc": (mx.metric.Accuracy(), multi),
        "topk": (mx.metric.TopKAccuracy(top_k=2), multi),
        "ce": (mx.metric.CrossEntropy(eps=1e-3), multi),
        "nll": (mx.metric.NegativeLogLikelihood(eps=1e-4), multi),
        "perplexity": (mx.metric.Perplexity(ignore_label=1), multi),
        "f1_micro": (mx.metric.F1(average="micro"), binary),
        "f1_macro": (mx.metric.F1(average="macro"), binary),
        "mcc_micro": (mx.metric.MCC(average="micro"), binary),
        "mcc_macro": (mx.metric.MCC(average="macro"), binary),
        "mae": (mx.metric.MAE(), regression),
        "mse": (mx.metric.MSE(), regression),
        "rmse": (mx.metric.RMSE(), regression),
        "pearson": (mx.metric.PearsonCorrelation(), regression),
        "loss": (mx.metric.Loss(), [(None, p) for _, p in regression]),
        "custom": (mx.metric.CustomMetric(lambda lab, p: float(np.abs(lab - p[:, :2]).max()),
                                          name="maxerr", allow_extra_outputs=True),
                   [(lab, np.concatenate([p, p], axis=1)) for lab, p in regression]),
    }
    for tag, (metric, data) in metrics.items():
        for i, (label, pred) in enumerate(data):
            labels = [] if label is None else [mx.nd.array(label)]
            metric.update(labels, [mx.nd.array(pred)])
            if i == 1:
                metric.reset_local()
        _record(metric, out, tag)
    composite = mx.metric.create(["acc", "ce", mx.metric.TopKAccuracy(top_k=2)])
    for label, pred in multi:
        composite.update([mx.nd.array(label)], [mx.nd.array(pred)])
    _record(composite, out, "composite")
    return out
