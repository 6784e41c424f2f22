"""Callback scenarios run identically under MXNet 1.9.1 and minimod (`run_all(mx)`).

The clock is faked (each `time.time()` call advances 0.25 s) and the root logger captured, so the
log lines are deterministic; gen_metric_golden.py stores MXNet's lines in callback_golden.json.
"""
import collections
import logging
import time

import numpy as np

BatchEndParam = collections.namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric",
                                                          "locals"])


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        self.now += 0.25
        return self.now


def _batches(mx):
    rng = np.random.RandomState(5)
    out = []
    for _ in range(8):
        label = rng.randint(0, 3, size=6).astype(np.float32)
        pred = rng.rand(6, 3).astype(np.float32)
        out.append(([mx.nd.array(label)], [mx.nd.array(pred)]))
    return out


def _drive(callback, metric, batches, epochs=(0, 1), nbatches=6):
    for epoch in epochs:
        for nbatch in range(nbatches):
            if metric is not None:
                metric.update(*batches[(epoch + nbatch) % len(batches)])
            callback(BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=metric,
                                   locals=None))


def scenarios(mx):
    batches = _batches(mx)
    return {
        "speedometer": lambda: _drive(mx.callback.Speedometer(4, frequent=2),
                                      mx.metric.create("acc"), batches),
        "speedometer_composite": lambda: _drive(
            mx.callback.Speedometer(4, frequent=3), mx.metric.create(["acc", "ce"]), batches),
        "speedometer_no_reset": lambda: _drive(
            mx.callback.Speedometer(8, frequent=2, auto_reset=False), mx.metric.create("acc"),
            batches),
        "speedometer_no_metric": lambda: _drive(mx.callback.Speedometer(2, frequent=2), None,
                                                batches),
        "log_train_metric": lambda: _drive(mx.callback.log_train_metric(2),
                                           mx.metric.create("mse"), batches),
        "log_train_metric_reset": lambda: _drive(
            mx.callback.log_train_metric(3, auto_reset=True), mx.metric.create("acc"), batches),
        "progress_bar": lambda: _drive(mx.callback.ProgressBar(7, length=10), None, batches,
                                       epochs=(0,), nbatches=8),
        "validation": lambda: _drive(mx.callback.LogValidationMetricsCallback(),
                                     mx.metric.create(["acc", "mae"]), batches, nbatches=2),
    }


def run_all(mx):
    """{scenario: [log lines]} with a fake clock and the root logger captured."""
    out = {}
    root = logging.getLogger()
    real_time = time.time
    old_level = root.level
    for name, run in scenarios(mx).items():
        handler = _Capture()
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        time.time = _Clock()
        try:
            run()
        finally:
            time.time = real_time
            root.removeHandler(handler)
            root.setLevel(old_level)
        out[name] = handler.lines
    return out
