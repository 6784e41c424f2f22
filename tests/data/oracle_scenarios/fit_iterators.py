"""Module.fit over the iterator wrappers with several metrics: NDArrayIter with dict inputs
and 'roll_over' last batches, ResizeIter, PrefetchingIter renaming the inputs, a composite of
acc / top_k_accuracy / ce / mse metrics reported per batch, a MultiFactorScheduler with
warm-up, NAG with clipping and a 'local' kvstore over two devices; then score with two
metrics and predict over a padded iterator (merged outputs, pad dropped)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import det_params, mlp, to_nd  # noqa: E402


def _metrics(mx):
    return mx.metric.CompositeEvalMetric([
        mx.metric.Accuracy(), mx.metric.TopKAccuracy(top_k=2), mx.metric.CrossEntropy(),
        mx.metric.create("mse")])


def run(mx):
    out = {}
    rng = np.random.RandomState(19)
    x = rng.uniform(-1, 1, size=(30, 6)).astype(np.float32)
    y = rng.randint(0, 4, size=(30,)).astype(np.float32)
    with mx.name.NameManager():
        sym = mlp(mx, hidden=(10,), classes=4)
    args, auxs = det_params(sym, data=(8, 6), softmax_label=(8,))
    train = mx.io.NDArrayIter({"data": x}, {"softmax_label": y}, batch_size=8,
                              last_batch_handle="roll_over")
    resized = mx.io.ResizeIter(train, 5)  # 5 batches an epoch, rolling over the data
    log = []

    def on_batch(p):
        log.append([p.epoch, p.nbatch] + [v for _, v in p.eval_metric.get_name_value()])

    sched = mx.lr_scheduler.MultiFactorScheduler(step=[3, 7], factor=0.5, base_lr=0.2,
                                                 warmup_steps=2, warmup_begin_lr=0.05)
    mod = mx.mod.Module(sym, context=[mx.cpu(0), mx.cpu(1)])
    mod.fit(resized, eval_metric=_metrics(mx), num_epoch=2, kvstore="local",
            arg_params=to_nd(mx, args), aux_params=to_nd(mx, auxs), optimizer="nag",
            optimizer_params={"lr_scheduler": sched, "momentum": 0.8, "clip_gradient": 0.1,
                              "rescale_grad": 1.0 / 8},
            batch_end_callback=on_batch)
    out["batch_log"] = np.array(log, dtype=np.float64)
    arg, _ = mod.get_params()
    for name in sorted(arg):
        out["p_" + name] = arg[name].asnumpy()
    evaluation = mx.io.PrefetchingIter(
        mx.io.NDArrayIter(x[:20], y[:20], batch_size=8, last_batch_handle="pad",
                          data_name="x", label_name="y"),
        rename_data=[{"x": "data"}], rename_label=[{"y": "softmax_label"}])
    for name, value in mod.score(evaluation, [mx.metric.Accuracy(), mx.metric.CrossEntropy()]):
        out["score_" + name] = value
    plain = mx.io.NDArrayIter(x[:20], batch_size=8, last_batch_handle="pad")
    predicted = mod.predict(plain)
    out["predict"] = predicted.asnumpy()
    return out
