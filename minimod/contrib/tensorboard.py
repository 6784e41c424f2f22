"""`mx.contrib.tensorboard`: log training metrics as TensorBoard scalars.

`LogMetricsCallback(logging_dir, prefix=None)` is a batch-end or eval-end callback (for
`Module.fit`'s `batch_end_callback` / `eval_end_callback`): each call writes every
(name, value) of `param.eval_metric` as a scalar, at step `param.epoch`, named
`<prefix>-<name>` when a prefix is given.

The event files are written by a TensorBoard writer from PyPI, an optional extra:
`mxboard`'s SummaryWriter when installed (MXNet's choice), else `tensorboardX`'s
(`pip install tensorboardX`, maintained). One bend from MXNet: with neither installed MXNet
logs an error and fails at the first call; minimod raises ImportError when the callback is
made, naming the package to install.
"""
from __future__ import annotations

__all__ = ["LogMetricsCallback"]


def _summary_writer(logging_dir: str):
    try:
        from mxboard import SummaryWriter
    except ImportError:
        try:
            from tensorboardX import SummaryWriter
        except ImportError:
            raise ImportError("mx.contrib.tensorboard.LogMetricsCallback needs a TensorBoard "
                              "writer: pip install tensorboardX (or mxboard)") from None
    return SummaryWriter(logging_dir)


class LogMetricsCallback:
    """Write the metric values of each call as TensorBoard scalars (see the module docstring).

    Parameters
    ----------
    logging_dir : str
        Folder of the event files (`tensorboard --logdir` it).
    prefix : str, optional
        Put before every metric name ("train-accuracy"), to tell curves apart in one plot.
    """

    def __init__(self, logging_dir, prefix=None):
        self.prefix = prefix
        self.summary_writer = _summary_writer(logging_dir)

    def __call__(self, param):
        if param.eval_metric is None:
            return
        for name, value in param.eval_metric.get_name_value():
            if self.prefix is not None:
                name = "%s-%s" % (self.prefix, name)
            self.summary_writer.add_scalar(name, value, global_step=param.epoch)
