"""add_n's bound forward on CuPy: up to eight terms per kernel instead of one kernel per term.

The gradient pass sums the contributions to an entry read by several nodes with one add_n
node. In an unrolled RNN each shared weight is read at every time step, so its gradient is
an add_n of 35 terms, which the op runs as 34 additions: 34 kernels per weight, about a sixth
of an unrolled LSTM's kernels in a training step. Here the first kernel adds up to eight
terms and each further kernel adds up to eight more into the output, in the op's order
(((a0 + a1) + a2) + ...), one rounding per addition, so the sums are the op's bit for bit.
NumPy keeps the op's own additions.
"""
from __future__ import annotations

from .. import backend
from ..ops.binary import AddNOp
from .registry import fast_path

__all__ = ["CHUNK", "FIRST_SUMS", "MORE_SUMS"]

#: the most terms one kernel adds
CHUNK = 8


def _spec(name: str, terms: int, onto_output: bool) -> backend.ElementwiseSpec:
    names = ["a%d" % k for k in range(terms)]
    sums = names if onto_output else ["%s + %s" % (names[0], names[1])] + names[2:]
    body = "".join("o = %s;" % (term if k == 0 and not onto_output else "o + " + term)
                   for k, term in enumerate(sums))
    return backend.ElementwiseSpec(name, ", ".join("T " + n for n in names), "T o", body)


#: terms -> the kernel writing o = a0 + a1 + ... (2 to CHUNK terms)
FIRST_SUMS = {k: _spec("add_n_%d" % k, k, False) for k in range(2, CHUNK + 1)}
#: terms -> the kernel adding a0, a1, ... onto o (1 to CHUNK terms)
MORE_SUMS = {k: _spec("add_n_onto_%d" % k, k, True) for k in range(1, CHUNK + 1)}


@fast_path(AddNOp, stage="forward")
def bind_forward(op, xp, inputs, aux, out):
    if len(inputs) < 3:  # the op's one addition (or copy) is one kernel already
        return None
    o = out[0]
    calls = [(backend.elementwise(xp, FIRST_SUMS[min(len(inputs), CHUNK)]),
              list(inputs[:CHUNK]) + [o])]
    for start in range(CHUNK, len(inputs), CHUNK):
        part = list(inputs[start:start + CHUNK])
        calls.append((backend.elementwise(xp, MORE_SUMS[len(part)]), part + [o]))
    if calls[0][0] is None:  # NumPy: the op's own additions
        return None

    def run_sums(xp, is_train):
        for kernel, arrays in calls:
            kernel(*arrays)
    return run_sums
