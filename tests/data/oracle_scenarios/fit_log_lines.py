"""The log lines of Module.fit, word for word: an MLP fit for two epochs with a validation set,
the batch-end callbacks Speedometer (with and without auto_reset) and log_train_metric, the
epoch-end do_checkpoint (every epoch and every second one), the eval-end
LogValidationMetricsCallback and a begin_epoch of 1, with a composite metric; timings,
speeds and the temporary folder are masked, every other character is compared. Also the
metric values a callback after them saw (NaN, stored as -1, once a Speedometer reset the
metric) and the files the checkpoints wrote."""
import logging
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import data, det_params, mlp, to_nd  # noqa: E402

SIZE = 8


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def _masked(line, folder):
    line = line.replace(folder, "<tmp>")
    line = re.sub(r"Speed: [0-9.e+-]+|inf", "Speed: <s>", line)
    return re.sub(r"Time cost=[0-9.e+-]+", "Time cost=<t>", line)


def run(mx):
    x, y = data(5 * SIZE, (6,), 4, seed=21)
    vx, vy = data(2 * SIZE + 3, (6,), 4, seed=22)
    train = mx.io.NDArrayIter(x, y, batch_size=SIZE, label_name="softmax_label")
    val = mx.io.NDArrayIter(vx, vy, batch_size=SIZE, label_name="softmax_label")
    sym = mlp(mx, hidden=(10,), classes=4)
    args, auxs = det_params(sym, data=(SIZE, 6), softmax_label=(SIZE,))
    seen = []
    handler = _Lines()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        with tempfile.TemporaryDirectory() as folder:
            prefix = os.path.join(folder, "net")
            mod = mx.mod.Module(sym, context=mx.cpu())
            mod.fit(train, eval_data=val, eval_metric=["acc", "ce"],
                    arg_params=to_nd(mx, args), aux_params=to_nd(mx, auxs),
                    optimizer="sgd", optimizer_params={"learning_rate": 0.2,
                                                       "momentum": 0.5},
                    batch_end_callback=[mx.callback.Speedometer(SIZE, 2),
                                        mx.callback.Speedometer(SIZE, 3, auto_reset=False),
                                        mx.callback.log_train_metric(2),
                                        lambda p: seen.append(
                                            (p.epoch, p.nbatch, p.eval_metric.get()))],
                    epoch_end_callback=[mx.callback.do_checkpoint(prefix),
                                        mx.callback.do_checkpoint(prefix + "_even", 2)],
                    eval_end_callback=mx.callback.LogValidationMetricsCallback(),
                    begin_epoch=1, num_epoch=3)
            files = sorted(os.listdir(folder))
            lines = [_masked(line, folder) for line in handler.lines]
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    out = {"log": "\n".join(lines), "files": " ".join(files)}
    for i, (epoch, nbatch, (names, values)) in enumerate(seen):
        # a Speedometer that resets the metric leaves NaN (0 / 0) for the callbacks after it
        out["seen%d" % i] = [-1.0 if v != v else v for v in [epoch, nbatch] + list(values)]
        out["seen_names%d" % i] = " ".join(names)
    return out
