"""`mx.contrib.autograd`: MXNet's first autograd interface, kept in 1.9.1 for old code, over
the same tape as `mx.autograd` (minimod.ndarray.tape).

Its scopes switch recording and training together: `train_section()` records in training
mode, `test_section()` stops both; `set_is_training(flag)` sets both and returns the previous
recording state. `mark_variables`, `backward(outputs, out_grads)` and `compute_gradient` are
`mx.autograd`'s; `grad_and_loss(func, argnum)` and `grad(func, argnum)` wrap a function of
NDArrays so that a call returns the gradients of its output with respect to the arguments
`argnum` picks (all by default), and, for `grad_and_loss`, the output too.
"""
from __future__ import annotations

import functools
from typing import Callable, Optional, Sequence, Union

from .. import autograd as _autograd
from ..base import MXNetError
from ..ndarray import NDArray, tape, zeros_like

__all__ = ["set_is_training", "TrainingStateScope", "train_section", "test_section",
           "mark_variables", "backward", "compute_gradient", "grad_and_loss", "grad"]

mark_variables = _autograd.mark_variables


def set_is_training(is_train: bool) -> bool:
    """Turn recording and training mode on or off together; returns whether recording was on."""
    tape.set_training(is_train)
    return tape.set_recording(is_train)


class TrainingStateScope:
    """A scope in which recording and training are both `enter_state`."""

    def __init__(self, enter_state: bool):
        self._enter_state = bool(enter_state)
        self._prev: Optional[tuple] = None

    def __enter__(self):
        self._prev = (tape.set_recording(self._enter_state),
                      tape.set_training(self._enter_state))
        return self

    def __exit__(self, *exc):
        recording, training = self._prev
        tape.set_recording(recording)
        tape.set_training(training)


def train_section() -> TrainingStateScope:
    """Record, in training mode, inside the scope."""
    return TrainingStateScope(True)


def test_section() -> TrainingStateScope:
    """Neither record nor train inside the scope (an evaluation inside a train_section)."""
    return TrainingStateScope(False)


def backward(outputs: Sequence[NDArray], out_grads: Optional[Sequence] = None,
             retain_graph: bool = False) -> None:
    """Gradients of `outputs` (a list) into the marked variables' buffers; `out_grads`, when
    given, holds one head gradient (or None, meaning ones) per output."""
    if not isinstance(outputs, (list, tuple)):
        raise MXNetError("contrib.autograd.backward: outputs must be a list or tuple of "
                         "NDArrays, got %s" % type(outputs).__name__)
    if out_grads is not None and len(out_grads) != len(outputs):
        raise MXNetError("contrib.autograd.backward: %d outputs but %d out_grads"
                         % (len(outputs), len(out_grads)))
    _autograd.backward(list(outputs), None if out_grads is None else list(out_grads),
                       retain_graph=retain_graph)


def compute_gradient(outputs: Sequence[NDArray]) -> None:
    """`backward(outputs)`."""
    backward(outputs)


def grad_and_loss(func: Callable, argnum: Union[int, Sequence[int], None] = None) -> Callable:
    """`func` wrapped to return (gradients of its output with respect to the chosen
    arguments, its output)."""
    @functools.wraps(func)
    def wrapped(*args):
        chosen = args
        if argnum is not None:
            picks = list(argnum) if isinstance(argnum, (list, tuple)) else [argnum]
            chosen = [args[i] for i in picks]
        for i, x in enumerate(chosen):
            if not isinstance(x, NDArray):
                raise MXNetError("contrib.autograd: argument %d to differentiate is a %s, not "
                                 "an NDArray" % (i, type(x).__name__))
        grads = [zeros_like(x) for x in chosen]
        mark_variables(list(chosen), grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else list(outputs))
        return grads, outputs
    return wrapped


def grad(func: Callable, argnum: Union[int, Sequence[int], None] = None) -> Callable:
    """`func` wrapped to return the gradients of its output with respect to the chosen
    arguments."""
    with_loss = grad_and_loss(func, argnum)

    @functools.wraps(func)
    def wrapped(*args):
        return with_loss(*args)[0]
    return wrapped
