"""`mx.autograd`: importable, not implemented.

minimod re-implements MXNet's symbolic stack; imperative differentiation (`autograd.record()`
with `NDArray.attach_grad()` and `backward()`) is not part of it. This module exists so that
code importing it loads; everything that would record or differentiate raises
NotImplementedError saying so. The queries answer truthfully: nothing is ever recorded, and
imperative calls run in inference mode (`is_training()` is False).
"""
from __future__ import annotations

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "backward", "grad", "Function",
           "get_symbol"]

_WHY = ("minimod has no autograd (mx.autograd.%s): it implements MXNet's symbolic API; build "
        "the computation with mx.sym and take gradients with Executor.backward or Module")


def _refuse(name: str):
    def refuse(*args, **kwargs):
        raise NotImplementedError(_WHY % name)
    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = "Not implemented in minimod: raises NotImplementedError."
    return refuse


record = _refuse("record")
pause = _refuse("pause")
train_mode = _refuse("train_mode")
predict_mode = _refuse("predict_mode")
set_recording = _refuse("set_recording")
set_training = _refuse("set_training")
mark_variables = _refuse("mark_variables")
backward = _refuse("backward")
grad = _refuse("grad")
get_symbol = _refuse("get_symbol")


def is_recording() -> bool:
    """False: minimod never records imperative calls."""
    return False


def is_training() -> bool:
    """False: imperative calls run in inference mode."""
    return False


class Function:
    """MXNet's custom differentiable function: not implemented in minimod."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(_WHY % "Function")
