"""Connectionist Temporal Classification loss (Graves et al., 2006): `CTCLoss`, also registered
as `ctc_loss`, `_contrib_CTCLoss` and `_contrib_ctc_loss` (MXNet 1.9.1's names for one op).

Inputs, with T time steps, N sequences and C classes (the blank among them):

- data (T, N, C): unnormalised activations; the softmax over C is taken inside;
- label (N, L): class indices, padded. With blank_label='first' the blank is class 0, the
  labels are 1 .. C-1 and the padding value is 0; with 'last' the blank is class C-1, the labels
  are 0 .. C-2 and the padding value is -1. A sequence's label length is the position of its
  first padding value (L when there is none), or `label_lengths[n]` with use_label_lengths;
- data_lengths (N,), with use_data_lengths: sequence n uses time steps 0 .. data_lengths[n]-1
  (otherwise all T); label_lengths (N,), with use_label_lengths. Both inputs exist only when
  their flag is set, as in MXNet.

Outputs: the loss (N,), -log p(label_n | data_n), and a hidden output `grad` (T, N, C) holding
d loss_n / d data[t, n, :], written by a training forward for the backward to read. Backward
multiplies it by the head gradient of the loss (MXNet does too); labels and lengths get no
gradient.

The math, in log space for stability, with the extended label l' = (blank, l1, blank, l2, ...,
blank) of length S_n = 2 L_n + 1 and e[t, s] = log softmax(data[t, n])[l'_s]:
alpha[t, s] = logsumexp(alpha[t-1, s], alpha[t-1, s-1], alpha[t-1, s-2]) + e[t, s], the s-2
term only where l'_s is not the blank and differs from l'_{s-2} (a label equal to the blank,
which MXNet accepts, counts as a blank there); beta is the same recursion run
backwards from the last step; log p = logsumexp(alpha[T_n-1, S_n-1], alpha[T_n-1, S_n-2]).
The gradient is softmax(data[t, n]) - sum over s with l'_s = k of
exp(alpha[t, s] + beta[t, s] - e[t, s] - log p). The recursions loop over time steps, each a
few array operations over the whole batch and every label position.

MXNet's conventions, kept: a sequence that no alignment fits (fewer steps than labels plus
repeated neighbours) has loss 0 and gradient 0; a sequence of 0 steps has loss inf and gradient
0. Bends: float64 data works (MXNet 1.9.1 accepts the type, then fails when it runs); lengths
are truncated to integers and clipped to [0, T] and [0, L], and class indices clipped to
[0, C-1], where MXNet reads or writes outside its arrays; time steps past a sequence's length
never reach its loss or gradient, even when they hold NaN. Where a label equals the blank,
the gradient is that of the loss (MXNet's loss agrees; its gradient there does not match its
own loss's finite differences).
"""
from __future__ import annotations

import dataclasses
from typing import Literal

from .. import backend
from ..base import ShapeError
from .registry import Op, fmt_shape, merge_shape, register

__all__ = ["CTCLoss"]

_NEG_INF = float("-inf")


@dataclasses.dataclass(frozen=True)
class CTCLossAttrs:
    use_data_lengths: bool = False
    use_label_lengths: bool = False
    blank_label: Literal["first", "last"] = "first"


@register
class CTCLoss(Op):
    """CTC loss per sequence; see the module docstring for the contract and the math."""

    name = "CTCLoss"
    aliases = ("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss")
    Attrs = CTCLossAttrs
    OUTPUTS = ("output", "grad")
    SIGNATURE_INPUTS = ("data", "label", "data_lengths", "label_lengths")
    backward_inputs = ()
    backward_outputs = (1,)

    def arguments(self) -> list:
        names = ["data", "label"]
        if self.attrs.use_data_lengths:
            names.append("data_lengths")
        if self.attrs.use_label_lengths:
            names.append("label_lengths")
        return names

    def num_visible_outputs(self) -> int:
        return 1

    def output_names(self, node_name: str) -> list:
        # two outputs, one visible: MXNet numbers the visible one
        return ["%s_output0" % node_name]

    # ------------------------------------------------------------------ inference
    def infer_shape(self, in_shapes: list, out_shapes: list):
        data, label = in_shapes[0], in_shapes[1]
        if data is not None and len(data) != 3:
            raise ShapeError("CTCLoss: input 'data' has shape %s but must be 3-D "
                             "(sequence length, batch size, alphabet size)" % fmt_shape(data))
        if label is not None and len(label) != 2:
            raise ShapeError("CTCLoss: input 'label' has shape %s but must be 2-D "
                             "(batch size, label length)" % fmt_shape(label))
        self.set_out(out_shapes, 1, data)
        data = in_shapes[0] = merge_shape(data, out_shapes[1])
        batch = None
        for shape, dim in ((data, 1), (label, 0), (out_shapes[0], 0)):
            if shape is None or shape[dim] is None:
                continue
            if batch is not None and shape[dim] != batch:
                raise ShapeError("CTCLoss: the batch sizes differ: input 'data' %s, input "
                                 "'label' %s, output %s" % (fmt_shape(data), fmt_shape(label),
                                                            fmt_shape(out_shapes[0])))
            batch = shape[dim]
        if data is not None and label is not None and None not in (data[0], label[1]) \
                and label[1] > data[0]:
            raise ShapeError("CTCLoss: input 'label' %s holds up to %d labels but input 'data' "
                             "%s has only %d time steps" % (fmt_shape(label), label[1],
                                                            fmt_shape(data), data[0]))
        self.set_out(out_shapes, 0, (batch,))
        if data is not None:
            self.set_in(in_shapes, 0, (data[0], batch, data[2]))
        if label is not None:
            self.set_in(in_shapes, 1, (batch, label[1]))
        for i in range(2, len(in_shapes)):
            self.set_in(in_shapes, i, (batch,), "the batch size %s" % batch)
        return in_shapes, out_shapes

    def infer_type(self, in_types: list, out_types: list):
        # the loss and its gradient take the data's type; labels and lengths keep their own
        in_types, out_types = list(in_types), list(out_types)
        dtype = next((t for t in (in_types[0], out_types[0], out_types[1]) if t is not None),
                     None)
        if dtype is not None:
            in_types[0] = dtype
            out_types = [dtype, dtype]
        return in_types, out_types

    # ------------------------------------------------------------------ compute
    def _lengths(self, xp, inputs, steps: int, width: int):
        """(data lengths, label lengths) as int64 (N,) arrays, clipped to [0, T], [0, L]."""
        a = self.attrs
        label = inputs[1].astype("int64")
        batch = label.shape[0]
        slot = 2
        if a.use_data_lengths:
            data_len = xp.clip(inputs[slot].astype("int64").reshape(batch), 0, steps)
            slot += 1
        else:
            data_len = xp.full((batch,), steps, dtype="int64")
        if a.use_label_lengths:
            label_len = xp.clip(inputs[slot].astype("int64").reshape(batch), 0, width)
        else:
            is_pad = label == (0 if a.blank_label == "first" else -1)
            label_len = xp.where(is_pad.any(axis=1), xp.argmax(is_pad, axis=1), width)
        return label, data_len, label_len

    def forward(self, xp, inputs, aux, out, is_train):
        data = inputs[0]
        steps, batch, classes = data.shape
        width = inputs[1].shape[1]
        work = "float64" if data.dtype == "float64" else "float32"
        label, data_len, label_len = self._lengths(xp, inputs, steps, width)
        blank = 0 if self.attrs.blank_label == "first" else classes - 1

        live = xp.arange(steps)[:, None] < data_len[None, :]                   # (T, N)
        # steps past a sequence's end may hold anything (NaN padding): zero them first
        x = xp.where(live[:, :, None], data.astype(work), 0)
        x = x - x.max(axis=2, keepdims=True)
        log_prob = x - xp.log(xp.exp(x).sum(axis=2, keepdims=True))

        span = 2 * width + 1
        label = xp.clip(label, 0, classes - 1)
        ext = xp.full((batch, span), blank, dtype="int64")                   # l'
        ext[:, 1::2] = label
        positions = xp.arange(span)[None, :]
        valid = positions < (2 * label_len + 1)[:, None]                     # s < S_n
        skip = xp.zeros((batch, span), dtype=bool)                           # s-2 -> s allowed
        skip[:, 3::2] = (label[:, 1:] != label[:, :-1]) & (label[:, 1:] != blank)
        emit = log_prob[:, xp.arange(batch)[:, None], ext]                   # (T, N, S)

        alphas = self._alphas(xp, emit, valid, skip, live)
        last = alphas[-1]
        end = 2 * label_len
        rows = xp.arange(batch)
        log_p = xp.logaddexp(last[rows, end],
                             xp.where(label_len > 0, last[rows, xp.maximum(end - 1, 0)],
                                      _NEG_INF))
        impossible = log_p == _NEG_INF
        loss = xp.where(impossible, 0, -log_p)
        loss = xp.where(data_len == 0, float("inf"), loss)
        xp.copyto(out[0], loss, casting="unsafe")
        if not is_train:
            out[1].fill(0)
            return
        posterior = self._posteriors(xp, emit, alphas, skip, live, data_len, end,
                                     xp.where(impossible, 0, log_p))
        grad = xp.exp(log_prob)
        flat = (xp.arange(steps * batch).reshape(steps, batch, 1) * classes + ext[None])
        backend.scatter_add(xp, grad.reshape(-1), flat.reshape(-1), -posterior.reshape(-1))
        keep = live & ~impossible[None, :]
        xp.multiply(grad, keep[:, :, None], out=out[1], casting="unsafe")

    @staticmethod
    def _alphas(xp, emit, valid, skip, live):
        """Forward variables alpha[t, n, s] (log space); frozen after a sequence's end."""
        steps, batch, span = emit.shape
        alphas = xp.empty(emit.shape, dtype=emit.dtype)
        start = valid & (xp.arange(span)[None, :] < 2) & live[0][:, None]
        alpha = xp.where(start, emit[0], _NEG_INF)
        alphas[0] = alpha
        one = xp.full((batch, span), _NEG_INF, dtype=emit.dtype)
        two = xp.full((batch, span), _NEG_INF, dtype=emit.dtype)
        for t in range(1, steps):
            one[:, 1:] = alpha[:, :-1]
            two[:, 2:] = alpha[:, :-2]
            new = xp.logaddexp(xp.logaddexp(alpha, one), xp.where(skip, two, _NEG_INF))
            new += emit[t]
            new = xp.where(valid, new, _NEG_INF)
            alpha = xp.where(live[t][:, None], new, alpha)
            alphas[t] = alpha
        return alphas

    @staticmethod
    def _posteriors(xp, emit, alphas, skip, live, data_len, end, log_p):
        """p(path through (t, s) | data) for every t, n, s: the backward variables beta run
        from each sequence's last step, combined with alpha."""
        steps, batch, span = emit.shape
        positions = xp.arange(span)[None, :]
        finals = (positions == end[:, None]) | (positions == end[:, None] - 1)
        skip_ahead = xp.zeros_like(skip)
        skip_ahead[:, :-2] = skip[:, 2:]                                     # s -> s+2 allowed
        posterior = xp.empty(emit.shape, dtype=emit.dtype)
        beta = xp.full((batch, span), _NEG_INF, dtype=emit.dtype)
        one = xp.full((batch, span), _NEG_INF, dtype=emit.dtype)
        two = xp.full((batch, span), _NEG_INF, dtype=emit.dtype)
        for t in range(steps - 1, -1, -1):
            one[:, :-1] = beta[:, 1:]
            two[:, :-2] = beta[:, 2:]
            step = xp.logaddexp(xp.logaddexp(beta, one), xp.where(skip_ahead, two, _NEG_INF))
            step += emit[t]
            first = xp.where(finals, emit[t], _NEG_INF)
            beta = xp.where((t == data_len - 1)[:, None], first,
                            xp.where((t < data_len - 1)[:, None], step, _NEG_INF))
            posterior[t] = alphas[t] + beta - emit[t]
        posterior -= log_p[None, :, None]
        return xp.exp(posterior, out=posterior)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        for g in in_grads[1:]:
            if g is not None:
                g.fill(0)
        if in_grads[0] is not None:
            head = out_grads[0].reshape(1, -1, 1)
            xp.multiply(outputs[1], head, out=in_grads[0], casting="unsafe")
