"""The autograd tape: what `mx.autograd.record()` keeps of imperative calls, and the backward
sweep over it.

Inside `record()`, every imperative call with an input that carries a gradient (an array marked
by `attach_grad`, or the result of such a recorded call) appends a `Node`: the call's backward
(for an operator, the op's own `backward` over the arrays the call read and wrote) and, per
input, where that input came from. An NDArray knows its place on the tape through its `_ag`
slot: None (a constant), a `Leaf` (a marked variable with its gradient buffer and `grad_req`),
or `(node, output index)`.

`backward(heads, head_grads)` walks the nodes the heads depend on in reverse recording order
(recording order is a topological order: a node is appended after its inputs exist), sums the
gradients reaching each entry, and writes the leaves' totals into their buffers as their
`grad_req` says ('write' replaces, 'add' accumulates, 'null' leaves it alone); a 'write'
variable that one input slot reads gets its gradient from the op straight into its buffer.
Without `retain_graph` the nodes drop their arrays afterwards, and a second backward through
them is an error naming the node.

This is the same arithmetic a bound graph runs (the gradient pass appends `_backward_<op>`
nodes that call the very same `Op.backward`); the tape only replaces the graph with the order
the calls happened in. Nothing here imports NDArray: the tape holds backend arrays, and callers
(`core.py`, `imperative.py`, `minimod.autograd`) wrap them.
"""
from __future__ import annotations

import itertools
import threading
from typing import Callable, Sequence

from .. import backend
from ..base import MXNetError
from ..ops.helpers import empty_result, zero_grads

__all__ = ["Leaf", "Node", "is_recording", "is_training", "set_recording", "set_training",
           "tracked", "record_op", "record_call", "reachable", "sweep", "head_entries",
           "backward"]

_GRAD_REQS = ("write", "add", "null")


class _State(threading.local):
    """Per thread, as MXNet keeps it: recording and training start off."""
    recording = False
    training = False


_STATE = _State()
_SEQ = itertools.count()


def is_recording() -> bool:
    return _STATE.recording


def is_training() -> bool:
    return _STATE.training


def set_recording(on: bool) -> bool:
    """Turn recording on or off; returns the previous state."""
    previous, _STATE.recording = _STATE.recording, bool(on)
    return previous


def set_training(on: bool) -> bool:
    """Turn training mode on or off; returns the previous state."""
    previous, _STATE.training = _STATE.training, bool(on)
    return previous


class Leaf:
    """A marked variable: the gradient buffer (an NDArray), how backward writes it, and
    whether a backward has written it since it was marked (`fresh`, MXNet's `_fresh_grad`,
    which its Gluon trainer reads to spot stale gradients)."""

    __slots__ = ("grad", "req", "fresh")

    def __init__(self, grad, req: str):
        if req not in _GRAD_REQS:
            raise MXNetError("grad_req must be one of %s, got %r" % (", ".join(_GRAD_REQS), req))
        self.grad = grad
        self.req = req
        self.fresh = False


class Node:
    """One recorded call: `run(out_grads, wanted, targets) -> in_grads` and where each input
    came from.
    `free()` (after a backward without retain_graph) drops every array it holds.

    `out_grads` has one backend array or None (no gradient reached it) per output; `wanted[i]`
    says whether input i needs its gradient; `targets[i]`, when not None, is a buffer the
    gradient of input i may be written into (a variable's own; a run may ignore it); the
    result has an array or None per input.
    `op` is kept for `mx.autograd.get_symbol` (None where no operator ran: indexing, a device
    copy, a custom Function).
    """

    __slots__ = ("seq", "name", "run", "parents", "n_outputs", "op", "__weakref__")

    def __init__(self, name: str, run: Callable, parents: list, n_outputs: int, op=None):
        self.seq = next(_SEQ)
        self.name = name
        self.run = run
        self.parents = parents
        self.n_outputs = n_outputs
        self.op = op

    def free(self) -> None:
        self.run = None  # the closure holding the call's arrays


def _entry(value):
    """The tape entry of `value`; an output of a node an earlier backward freed is a constant
    from then on, as in MXNet."""
    entry = getattr(value, "_ag", None)
    if isinstance(entry, tuple) and entry[0].run is None:
        return None
    return entry


def tracked(*values) -> bool:
    """Whether a call on these values must be recorded: recording is on and one of them (an
    NDArray, or a list of them) carries a gradient."""
    if not _STATE.recording:
        return False
    for v in values:
        if isinstance(v, (list, tuple)):
            if any(_entry(x) is not None for x in v):
                return True
        elif _entry(v) is not None:
            return True
    return False


def record_call(name: str, inputs: Sequence, results: Sequence, run: Callable, op=None) -> None:
    """Append a node for a call on NDArrays `inputs` that gave NDArrays `results`, whose
    backward is `run(out_grads, wanted, targets)` (see Node), when recording and an input
    carries a gradient; mark the results as its outputs."""
    parents = [_entry(a) for a in inputs]
    if not _STATE.recording or all(p is None for p in parents):
        return
    node = Node(name, run, parents, len(results), op)
    for i, r in enumerate(results):
        r._ag = (node, i)


def record_op(name: str, op, inputs: Sequence, results: Sequence, all_outputs: list,
              xp) -> None:
    """Record an operator call: `inputs` the NDArrays it read (arguments, then aux states),
    `all_outputs` every array its forward wrote (hidden ones too), `results` the NDArrays the
    caller got back. Its backward is the op's own; `record_call` decides whether the call
    goes on the tape."""
    if op.no_gradient:
        return  # BlockGrad, argmax, comparisons ...: nothing flows back; results are constants
    n_args = len(op.arguments())
    args = [a._data for a in inputs[:n_args]]
    aux = [a._data for a in inputs[n_args:]]
    outs = list(all_outputs)
    n_visible = op.num_visible_outputs()

    def run(out_grads, wanted, targets):
        if not op.differentiable:
            raise MXNetError("autograd: operator %s (%s) has no gradient, and an input of it "
                             "needs one" % (name, op.name))
        heads = [None] * len(outs)
        if op.needs_out_grad:
            for i in range(n_visible):
                g = out_grads[i]
                heads[i] = xp.zeros_like(outs[i]) if g is None else g
        # an op's backward writes every element of its gradients (the executor hands it
        # unzeroed planned buffers, and the user's own gradient arrays), so the gradient of a
        # variable with one reader goes straight into its buffer
        in_grads = [None if not want else t if t is not None else xp.empty_like(a)
                    for a, want, t in zip(args, wanted, targets)]
        if empty_result(op, outs):  # no output element: every gradient is 0
            zero_grads(in_grads)
        else:
            op.backward(xp, heads, args, outs, in_grads, aux)
        return in_grads + [None] * len(aux)

    record_call(name, inputs, results, run, op)


def reachable(heads: list) -> list:
    """The nodes the head entries depend on, latest first."""
    seen, stack = {}, [e[0] for e in heads if isinstance(e, tuple)]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        stack.extend(p[0] for p in node.parents if isinstance(p, tuple))
    return sorted(seen.values(), key=lambda n: n.seq, reverse=True)


def _accumulate(grads: dict, key, grad) -> None:
    have = grads.get(key)
    grads[key] = grad if have is None else have + grad


def _direct_targets(nodes: list, heads: list, direct: bool) -> dict:
    """{Leaf: its gradient buffer} for the 'write' variables exactly one recorded input slot
    reads (and no head is): their one gradient may be written straight into the buffer."""
    if not direct:
        return {}
    readers: dict = {}
    for leaf in heads:
        if isinstance(leaf, Leaf):
            readers[leaf] = 2
    for node in nodes:
        for parent in node.parents:
            if isinstance(parent, Leaf):
                readers[parent] = readers.get(parent, 0) + 1
    return {leaf: leaf.grad._data for leaf, n in readers.items()
            if n == 1 and leaf.req == "write"}


def sweep(heads: list, head_grads: list, retain_graph: bool, direct: bool = False) -> dict:
    """{Leaf: its summed gradient (a backend array)} for the heads' entries and backend head
    gradients; frees the nodes unless `retain_graph`. With `direct`, the gradient of a 'write'
    variable with one reader is written into its buffer by the op itself (then the array
    returned for it is the buffer)."""
    grads: dict = {}
    for entry, grad in zip(heads, head_grads):
        _accumulate(grads, entry, grad)
    nodes = reachable(heads)
    buffers = _direct_targets(nodes, heads, direct)
    for node in nodes:
        out_grads = [grads.pop((node, i), None) for i in range(node.n_outputs)]
        if all(g is None for g in out_grads):
            continue
        if node.run is None:
            raise MXNetError("autograd: the graph through %s was freed by an earlier backward; "
                             "pass retain_graph=True to the first backward to go through it "
                             "twice" % node.name)
        wanted = [p is not None and not (isinstance(p, Leaf) and p.req == "null")
                  for p in node.parents]
        if any(wanted):
            targets = [buffers.get(p) if isinstance(p, Leaf) else None for p in node.parents]
            for parent, grad in zip(node.parents, node.run(out_grads, wanted, targets)):
                if parent is not None and grad is not None:
                    _accumulate(grads, parent, grad)
        if not retain_graph:
            node.free()
    return {k: v for k, v in grads.items() if isinstance(k, Leaf)}


def backward(heads: Sequence, head_grads: Sequence, retain_graph: bool = False) -> None:
    """Backward from NDArrays `heads` (gradients `head_grads`: NDArrays, or None for ones),
    writing each reached leaf's gradient buffer as its grad_req says."""
    for leaf, grad in sweep(*head_entries(heads, head_grads), retain_graph, True).items():
        target = leaf.grad._data
        if leaf.req == "null":
            continue
        leaf.fresh = True
        if grad is target:  # written there by the op
            continue
        with backend.device_scope(leaf.grad.context):
            if leaf.req == "add":
                target += grad.astype(target.dtype, copy=False)
            else:
                target[...] = grad


def head_entries(heads: Sequence, head_grads: Sequence) -> tuple:
    """The tape entries of NDArrays `heads` and their gradients as backend arrays (ones where
    None), checked: a head computed outside `record()`, or a head gradient of another shape,
    is an error naming it."""
    if len(head_grads) != len(heads):
        raise MXNetError("autograd: %d heads but %d head gradients" % (len(heads), len(head_grads)))
    entries, grads = [], []
    for i, (head, grad) in enumerate(zip(heads, head_grads)):
        entry = getattr(head, "_ag", None)
        if isinstance(entry, tuple) and entry[0].run is None:
            raise MXNetError("autograd: the graph of head %d (through %s) was freed by an "
                             "earlier backward; pass retain_graph=True to that backward to go "
                             "through it twice" % (i, entry[0].name))
        if entry is None:
            raise MXNetError("autograd: head %d (shape %s) was not computed from a variable "
                             "inside autograd.record(); attach_grad() the inputs and compute "
                             "it while recording" % (i, head.shape))
        entries.append(entry)
        if grad is None:
            xp = backend.array_module_of(head._data)
            with backend.device_scope(head.context):
                grads.append(xp.ones_like(head._data))
            continue
        if tuple(grad.shape) != tuple(head.shape):
            raise MXNetError("autograd: head gradient %d has shape %s but its head has %s"
                             % (i, tuple(grad.shape), tuple(head.shape)))
        grads.append(backend.to_context(grad._data, head.context).astype(head._data.dtype,
                                                                          copy=False))
    return entries, grads
