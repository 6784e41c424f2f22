"""`mx.autograd`: gradients of imperative NDArray code, as MXNet 1.9.1 takes them.

    x = mx.nd.array([[1., 2.], [3., 4.]])
    x.attach_grad()                    # x becomes a variable with a zeroed x.grad
    with mx.autograd.record():         # calls on x (and on what comes of it) go on a tape
        y = (x * x).sum()
    y.backward()                       # x.grad == 2 * x

What is recorded, and how backward runs it, is in `minimod.ndarray.tape`: each call is the
operator a bound graph would run for it, and backward calls that operator's own `backward`,
so an imperative gradient is the number `Executor.backward` gives for the same graph.
`record()` also turns training mode on (Dropout drops, BatchNorm uses and updates the batch
statistics); `pause()` and `predict_mode()` step out of either.

Not here: higher-order gradients (`grad(..., create_graph=True)` raises), sparse gradient
buffers (`attach_grad(stype=...)` raises), and Gluon, which builds on this in MXNet.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from .base import MXNetError
from .ndarray import NDArray, tape, zeros
from .ndarray.core import wrap
from .symbol import var as _var
from .symbol.symbol import make_op_symbol

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "backward", "grad", "Function",
           "get_symbol"]


def is_recording() -> bool:
    """Whether imperative calls are being recorded (inside `record()`)."""
    return tape.is_recording()


def is_training() -> bool:
    """Whether imperative calls run in training mode (Dropout drops, BatchNorm uses the batch
    statistics)."""
    return tape.is_training()


def set_recording(is_recording: bool) -> bool:  # noqa: A002 - MXNet's parameter name
    """Turn recording on or off; returns the previous state."""
    return tape.set_recording(is_recording)


def set_training(train_mode: bool) -> bool:
    """Turn training mode on or off; returns the previous state."""
    return tape.set_training(train_mode)


@contextlib.contextmanager
def _scope(recording: bool | None, training: bool | None) -> Iterator[None]:
    old_rec = tape.set_recording(recording) if recording is not None else None
    old_train = tape.set_training(training) if training is not None else None
    try:
        yield
    finally:
        if recording is not None:
            tape.set_recording(old_rec)
        if training is not None:
            tape.set_training(old_train)


def record(train_mode: bool = True):  # noqa: A002
    """A scope that records imperative calls for `backward`, in training mode unless
    `train_mode=False`."""
    return _scope(True, train_mode)


def pause(train_mode: bool = False):  # noqa: A002
    """A scope inside `record()` whose calls are not recorded (inference mode unless
    `train_mode=True`)."""
    return _scope(False, train_mode)


def train_mode():
    """A scope in training mode, recording or not as before."""
    return _scope(None, True)


def predict_mode():
    """A scope in inference mode, recording or not as before."""
    return _scope(None, False)


def _as_list(values) -> list:
    return list(values) if isinstance(values, (list, tuple)) else [values]


def mark_variables(variables, gradients, grad_reqs="write") -> None:
    """Make `variables` (NDArrays) variables of the tape, with `gradients` (NDArrays of the same
    shapes) as their gradient buffers: `attach_grad` with buffers of your own."""
    variables, gradients = _as_list(variables), _as_list(gradients)
    reqs = [grad_reqs] * len(variables) if isinstance(grad_reqs, str) else list(grad_reqs)
    if not len(variables) == len(gradients) == len(reqs):
        raise MXNetError("mark_variables: %d variables, %d gradients and %d grad_reqs; give one "
                         "of each per variable" % (len(variables), len(gradients), len(reqs)))
    for i, (var, buf, req) in enumerate(zip(variables, gradients, reqs)):
        if tuple(buf.shape) != tuple(var.shape):
            raise MXNetError("mark_variables: gradient %d has shape %s but its variable has %s"
                             % (i, tuple(buf.shape), tuple(var.shape)))
        var._ag = tape.Leaf(buf, req)


def _head_grads(heads: list, head_grads) -> list:
    if head_grads is None:
        return [None] * len(heads)
    return _as_list(head_grads)


def backward(heads, head_grads=None, retain_graph: bool = False,
             train_mode: bool = True) -> None:  # noqa: A002
    """Gradients of `heads` (NDArrays recorded under `record()`) with respect to the variables
    they came from, written into the variables' `grad` buffers. `head_grads`: one NDArray (or
    None, meaning ones) per head."""
    heads = _as_list(heads)
    tape.backward(heads, _head_grads(heads, head_grads), retain_graph)


def grad(heads, variables, head_grads=None, retain_graph: bool | None = None,
         create_graph: bool = False, train_mode: bool = True):  # noqa: A002
    """The gradients of `heads` with respect to `variables` (NDArrays marked by attach_grad),
    returned as new NDArrays; the variables' own `grad` buffers are left alone. A variable the
    heads do not depend on is an error, as in MXNet."""
    if create_graph:
        raise NotImplementedError("autograd.grad(create_graph=True): minimod does not record "
                                  "the backward pass, so higher-order gradients are not "
                                  "available")
    heads, single = _as_list(heads), isinstance(variables, NDArray)
    variables = _as_list(variables)
    leaves = []
    for i, var in enumerate(variables):
        if not isinstance(var._ag, tape.Leaf):
            raise MXNetError("autograd.grad: variable %d (shape %s) is not marked; call "
                             "attach_grad() on it before recording" % (i, var.shape))
        leaves.append(var._ag)
    entries, grads = tape.head_entries(heads, _head_grads(heads, head_grads))
    reached = {id(e) for e in entries if isinstance(e, tape.Leaf)}
    reached.update(id(p) for node in tape.reachable(entries) for p in node.parents
                   if isinstance(p, tape.Leaf))
    for i, leaf in enumerate(leaves):
        if id(leaf) not in reached:
            raise MXNetError("autograd.grad: cannot differentiate with respect to variable %d "
                             "(shape %s): the heads do not depend on it"
                             % (i, variables[i].shape))
    totals = tape.sweep(entries, grads, bool(retain_graph))
    out = []
    for var, leaf in zip(variables, leaves):
        total = totals.get(leaf)
        if total is None:  # reached only through calls no gradient flowed back through
            total = var._xp.zeros_like(var._data)
        out.append(wrap(total.astype(var._data.dtype, copy=False), var.context))
    return out[0] if single else out


class Function:
    """A differentiable function of your own: subclass it, write `forward(*inputs)` and
    `backward(*output_grads)` on NDArrays (backward returns one gradient per input), and call
    an instance on NDArrays. Inside `record()`, the call goes on the tape as one node whose
    backward is yours; `save_for_backward(*arrays)` keeps what backward needs in
    `self.saved_tensors`."""

    def __init__(self):
        self.saved_tensors: tuple = ()

    def save_for_backward(self, *args) -> None:
        self.saved_tensors = args

    def forward(self, *inputs):
        raise NotImplementedError("%s.forward is not written" % type(self).__name__)

    def backward(self, *output_grads):
        raise NotImplementedError("%s.backward is not written" % type(self).__name__)

    def __call__(self, *inputs):
        with pause():
            outputs = self.forward(*inputs)
        results = _as_list(outputs)
        if tape.tracked(*inputs):
            tape.record_call(type(self).__name__, list(inputs), results,
                             self._backward_for(results, len(inputs)))
        return outputs

    def _backward_for(self, results: list, n_inputs: int):
        """The tape's backward of one call: missing head gradients are zeros, and the
        gradients your backward returns come back as backend arrays."""
        shapes = [(r._data.shape, r._data.dtype, r.context) for r in results]
        name = type(self).__name__

        def run(out_grads: list, wanted: list, targets: list) -> list:
            heads = []
            for g, (shape, dtype, ctx) in zip(out_grads, shapes):
                if g is None:
                    heads.append(zeros(shape, ctx=ctx, dtype=dtype))
                else:
                    heads.append(wrap(g, ctx))
            with pause():
                grads = _as_list(self.backward(*heads))
            if len(grads) != n_inputs:
                raise MXNetError("%s.backward returned %d gradients for %d inputs"
                                 % (name, len(grads), n_inputs))
            return [g._data if isinstance(g, NDArray) else None for g in grads]
        return run


def get_symbol(x):
    """The computation recorded for NDArray `x` as a Symbol: its marked variables become
    `var0`, `var1` ... and the arrays that carried no gradient `const0`, `const1` ..., in the
    order the tape met them. Calls recorded without an operator (indexing, a device copy, a
    custom Function) have no Symbol form: an error names the first one met."""
    entry = x._ag
    if entry is None:
        raise MXNetError("get_symbol: the array was not computed under autograd.record() from "
                         "a variable")
    variables: dict = {}  # a Leaf, or ("const", node, input) -> its Symbol variable
    counts = {"var": 0, "const": 0}

    def leaf(key, kind: str):
        if key not in variables:
            variables[key] = _var("%s%d" % (kind, counts[kind]))
            counts[kind] += 1
        return variables[key]

    built: dict = {}  # id(node) -> its output Symbols
    for node in tape.reachable([entry])[::-1]:  # in recording order
        if node.op is None:
            raise MXNetError("get_symbol: the recorded %s has no operator, so no Symbol form"
                             % node.name)
        args = []
        for i, parent in enumerate(node.parents):
            if isinstance(parent, tuple):
                args.append(built[id(parent[0])][parent[1]])
            elif parent is None:
                args.append(leaf(("const", id(node), i), "const"))
            else:
                args.append(leaf(parent, "var"))
        out = make_op_symbol(node.op.name, args, dict(node.op.raw_attrs))
        n_out = node.op.num_visible_outputs()
        built[id(node)] = [out[k] for k in range(n_out)] if n_out > 1 else [out]
    if isinstance(entry, tape.Leaf):
        return leaf(entry, "var")
    return built[id(entry[0])][entry[1]]
