"""`mx.callback`: the batch-end and epoch-end callbacks of MXNet 1.9.1's `fit`.

Batch-end callbacks take one argument, a `BatchEndParam(epoch, nbatch, eval_metric, locals)`;
epoch-end callbacks take `(epoch, symbol, arg_params, aux_params)`. Every message goes to the root
`logging` logger at INFO in MXNet's exact format, because users and benchmarks grep for it.
The sync a metric needs happens when these callbacks call `get_name_value()`, i.e. once every
`frequent` batches, never per batch.
"""
from __future__ import annotations

import logging
import math
import time
from collections import namedtuple
from typing import Any, Callable

from . import checkpoint
from .base import MXNetError
from .checkpoint import save_checkpoint  # noqa: F401 - MXNet's mx.callback has it too

__all__ = ["BatchEndParam", "module_checkpoint", "do_checkpoint", "log_train_metric",
           "Speedometer", "ProgressBar", "LogValidationMetricsCallback"]

#: What a batch-end (and eval-end) callback receives; MXNet's `mx.model.BatchEndParam`, which
#: model.py re-exports.
BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])


def _period(period: int) -> int:
    return int(max(1, period))


def _writes_checkpoints() -> bool:
    """False on workers other than rank 0 of a dist kvstore: rank 0 alone writes checkpoints
    (every replica holds the same parameters; the folder is assumed shared)."""
    from .kvstore.dist import worker_rank
    return worker_rank() == 0


def module_checkpoint(mod: Any, prefix: str, period: int = 1,
                      save_optimizer_states: bool = False) -> Callable:
    """Epoch-end callback: `mod.save_checkpoint(prefix, epoch + 1, ...)` every `period` epochs
    (on rank 0 only in distributed training)."""
    period = _period(period)

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0 and _writes_checkpoints():
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def do_checkpoint(prefix: str, period: int = 1) -> Callable:
    """Epoch-end callback saving symbol and parameters as epoch `epoch + 1` every `period`
    (on rank 0 only in distributed training)."""
    period = _period(period)

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0 and _writes_checkpoints():
            checkpoint.save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def log_train_metric(period: int, auto_reset: bool = False) -> Callable:
    """Batch-end callback logging `Iter[e] Batch[b] Train-name=value` every `period` batches."""
    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch, name,
                             value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer:
    """Logs samples/sec (and the metric) every `frequent` batches.

    The first call of an epoch only starts the clock. With `auto_reset` the metric is reset
    (locally) after each log, so each line covers `Batch [n-frequent-n]`; without it the
    values run from the start of the epoch, `Batch [0-n]`.
    """

    def __init__(self, batch_size: int, frequent: int = 50, auto_reset: bool = True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.init = False
        self.tic = 0.0
        self.last_count = 0
        self.auto_reset = auto_reset

    def __call__(self, param: Any) -> None:
        count = param.nbatch
        if self.last_count > count:  # a new epoch started
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        try:
            speed = self.frequent * self.batch_size / (time.time() - self.tic)
        except ZeroDivisionError:
            speed = float("inf")
        metric = param.eval_metric
        if metric is None:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count,
                         speed)
        else:
            name_value = metric.get_name_value()
            values = [item for pair in name_value for item in pair]
            fields = "\t%s=%f" * len(name_value)
            if self.auto_reset:
                metric.reset_local()
                logging.info("Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" + fields,
                             param.epoch, count - self.frequent, count, speed, *values)
            else:
                logging.info("Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec" + fields,
                             param.epoch, count, speed, *values)
        self.tic = time.time()


class ProgressBar:
    """Batch-end callback showing how far an epoch has come.

    By default it does what MXNet's does, line for line: log `[====----] NN%` through
    `logging.info` for batch `nbatch` of `total` (so the last batch shows just under 100%).
    With `stream` (e.g. `sys.stderr`) it instead draws one line on that terminal, redrawn in
    place with a carriage return, counting batch `nbatch` as done and ending the line at the
    epoch's last batch: `Epoch[1] [=====-----]  50% (50/100 batches)`. `total` is the number of
    batches in an epoch (`math.ceil(num_samples / batch_size)`).
    """

    def __init__(self, total: int, length: int = 80, stream: Any = None):
        if int(total) < 1:
            raise MXNetError("ProgressBar: total must be a positive number of batches, got %r"
                             % (total,))
        self.bar_len = int(length)
        self.total = int(total)
        self.stream = stream

    def render(self, epoch: int, done: int) -> str:
        """The terminal line for `done` of `total` batches (without the carriage return)."""
        done = min(max(int(done), 0), self.total)
        filled = int(round(self.bar_len * done / float(self.total)))
        percent = int(math.floor(100.0 * done / self.total))
        return "Epoch[%d] [%s%s] %3d%% (%d/%d batches)" % (
            epoch, "=" * filled, "-" * (self.bar_len - filled), percent, done, self.total)

    def __call__(self, param: Any) -> None:
        if self.stream is None:
            count = param.nbatch
            filled_len = int(round(self.bar_len * count / float(self.total)))
            percents = math.ceil(100.0 * count / float(self.total))
            prog_bar = "=" * filled_len + "-" * (self.bar_len - filled_len)
            logging.info("[%s] %s%s\r", prog_bar, percents, "%")
            return
        done = param.nbatch + 1
        self.stream.write("\r" + self.render(param.epoch, done))
        if done >= self.total:
            self.stream.write("\n")
        self.stream.flush()


class LogValidationMetricsCallback:
    """Eval-end callback logging `Epoch[e] Validation-name=value` for each metric value."""

    def __call__(self, param: Any) -> None:
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)
