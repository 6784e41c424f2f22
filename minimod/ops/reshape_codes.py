"""MXNet's Reshape shape codes: `infer_reshape(codes, dshape)` gives the output shape that
`Reshape(shape=codes)` makes of data of shape `dshape`, partial shapes included."""
from __future__ import annotations

from ..base import ShapeError
from .helpers import prod_or_none
from .registry import fmt_shape

__all__ = ["infer_reshape"]


def infer_reshape(codes: tuple, dshape: tuple, reverse: bool = False) -> tuple:
    """The output shape MXNet's Reshape gives for `codes` applied to `dshape`.

    Codes: d > 0 is a new dim; 0 copies the input dim; -1 is inferred from the total size (one
    at most); -2 copies every remaining input dim; -3 merges the next two input dims; -4 splits
    the next input dim into the two codes that follow (either may be -1). Every code except -2
    and -4's two operands consumes one input dim, as in MXNet (so `(6, 0)` on (2, 3, 4) copies
    the 3). With `reverse`, both lists are read right to left.

    Unknown input dims (None) propagate; -1 is still inferred when every unknown input dim is
    copied unchanged to the output (batch size unknown, `(0, -1)`). Raises ShapeError.
    """
    out = _ReshapeWalk(codes, dshape, reverse).run()
    if reverse:
        out.reverse()
    return tuple(out)


class _ReshapeWalk:
    """One pass of `infer_reshape`: reads the codes in order, consuming input dims and
    appending output dims (both lists reversed first for `reverse`). Positions named in errors
    are positions in the codes as read."""

    def __init__(self, codes: tuple, dshape: tuple, reverse: bool):
        self.codes = list(codes)
        self.src = list(dshape)
        if reverse:
            self.codes.reverse()
            self.src.reverse()
        self.dshape = dshape
        self.out: list = []
        self.copied_unknown = 0  # unknown input dims copied unchanged to the output
        self.infer_at = -1       # where the -1 dim sits in `out`
        self.k = 0               # the next input dim to consume

    def run(self) -> list:
        i = 0
        while i < len(self.codes):
            i = self._apply(i) + 1
        if self.infer_at >= 0:
            self._infer_minus_one()
        return self.out

    def _apply(self, i: int) -> int:
        """Apply the code at position i; returns the position of the last code it read."""
        code = self.codes[i]
        if code == 0:
            self._copy(i)
        elif code == -1:
            if self.infer_at >= 0:
                raise ShapeError("shape %s: only one dim can be inferred (-1)"
                                 % (tuple(self.codes),))
            self.infer_at = len(self.out)
            self.out.append(1)
            self.k += 1
        elif code == -2:
            while self.k < len(self.src):
                self._copy(i)
        elif code == -3:
            self._merge(i)
        elif code == -4:
            return self._split(i)
        elif code > 0:
            self.out.append(code)
            self.k += 1
        else:
            raise ShapeError("shape %s: unknown code %d" % (tuple(self.codes), code))
        return i

    def _copy(self, i: int) -> None:
        if self.k >= len(self.src):
            raise ShapeError("code 0 at position %d copies an input dim, but the input %s "
                             "has only %d dims" % (i, fmt_shape(self.dshape), len(self.src)))
        dim = self.src[self.k]
        self.out.append(dim)
        self.copied_unknown += dim is None
        self.k += 1

    def _merge(self, i: int) -> None:
        k = self.k
        if k + 1 >= len(self.src):
            raise ShapeError("code -3 at position %d merges two input dims, but the input "
                             "%s has no dims %d and %d" % (i, fmt_shape(self.dshape), k, k + 1))
        a, b = self.src[k], self.src[k + 1]
        self.out.append(None if a is None or b is None else a * b)
        self.k += 2

    def _split(self, i: int) -> int:
        if i + 2 >= len(self.codes):
            raise ShapeError("code -4 at position %d needs two codes after it in %s"
                             % (i, tuple(self.codes)))
        if self.k >= len(self.src):
            raise ShapeError("code -4 at position %d splits an input dim, but the input %s "
                             "has only %d dims" % (i, fmt_shape(self.dshape), len(self.src)))
        d0 = self.src[self.k]
        self.k += 1
        d1, d2 = self.codes[i + 1], self.codes[i + 2]
        if d1 == -1 and d2 == -1:
            raise ShapeError("code -4: the two split dims cannot both be -1")
        if d1 < -1 or d2 < -1 or d1 == 0 or d2 == 0:
            raise ShapeError("code -4: split dims must be positive or -1, got %d, %d"
                             % (d1, d2))
        if d0 is not None:
            if d1 == -1:
                d1 = d0 // d2
            if d2 == -1:
                d2 = d0 // d1
            if d1 * d2 != d0:
                raise ShapeError("code -4: split dims %d, %d do not multiply to the input "
                                 "dim %d" % (d1, d2, d0))
        self.out.append(None if d1 == -1 else d1)
        self.out.append(None if d2 == -1 else d2)
        return i + 2

    def _infer_minus_one(self) -> None:
        """Fill the -1 dim from the total size, when every other unknown output dim is an
        unknown input dim copied unchanged (so the known dims account for the rest)."""
        out, src, at = self.out, self.src, self.infer_at
        out[at] = None
        n_unknown_in = sum(d is None for d in src)
        if n_unknown_in != self.copied_unknown \
                or sum(d is None for d in out) != 1 + self.copied_unknown:
            return
        total = prod_or_none(d for d in src if d is not None)
        rest = prod_or_none(d for j, d in enumerate(out) if d is not None and j != at)
        if rest == 0 or total % rest:
            raise ShapeError("cannot infer the -1 dim: input %s has size %d, not a multiple "
                             "of %d" % (fmt_shape(self.dshape), total, rest))
        out[at] = total // rest
