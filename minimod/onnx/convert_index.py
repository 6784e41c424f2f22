"""ONNX conversions of the operators that select by index or by order: arg-extrema, take,
Embedding, pick, gather_nd, one_hot, topk/sort/argsort, and the sequence ops (SequenceMask,
SequenceLast, SequenceReverse) with or without their lengths.

MXNet gives indices as floats in the output's dtype and clips out-of-range indices where ONNX
would fail or wrap; the conversions cast and clip to match.
"""
from __future__ import annotations

import numpy as np

from .builder import Site, converts

_INT64 = 7


def _as_index(site: Site, x: str, hint: str) -> str:
    return site.b.add("Cast", [x], hint=site.name + hint, to=_INT64)


def _clipped(site: Site, index: str, size: int) -> str:
    b = site.b
    return b.add("Clip", [index, b.const(0, site.name + "_lo", np.int64),
                          b.const(size - 1, site.name + "_hi", np.int64)])


def _cast_out(site: Site, value: str, k: int = 0) -> None:
    site.b.add("Cast", [value], out=site.outs[k],
               to=site.b.helper.np_dtype_to_tensor_dtype(site.out_dtypes[k]))


@converts("argmax", "argmin")
def _arg_extremum(site: Site) -> None:
    a, b = site.attrs, site.b
    x, axis = site.ins[0], a.axis
    if axis is None:
        x, axis = b.reshape(x, [-1], hint=site.name + "_flat"), 0
    op_type = "ArgMax" if site.node.op.name == "argmax" else "ArgMin"
    _cast_out(site, b.add(op_type, [x], hint=site.name + "_index", axis=axis,
                          keepdims=int(bool(a.keepdims) or a.axis is None)))


@converts("take")
def _take(site: Site) -> None:
    a = site.attrs
    if a.mode != "clip":
        raise site.refuse("mode=%r: only 'clip' indices are exported" % a.mode)
    axis = a.axis % site.rank(0)
    index = _clipped(site, _as_index(site, site.ins[1], "_index"), site.in_shapes[0][axis])
    site.b.add("Gather", [site.ins[0], index], out=site.outs[0], axis=axis)


@converts("Embedding")
def _embedding(site: Site) -> None:
    """A row of the weight per index: MXNet clips the indices into the table."""
    index = _clipped(site, _as_index(site, site.ins[0], "_index"), site.in_shapes[1][0])
    site.b.add("Gather", [site.ins[1], index], out=site.outs[0], axis=0)


@converts("argmax_channel")
def _argmax_channel(site: Site) -> None:
    _cast_out(site, site.b.add("ArgMax", [site.ins[0]], hint=site.name + "_index", axis=1,
                               keepdims=0))


@converts("pick")
def _pick(site: Site) -> None:
    a, b = site.attrs, site.b
    rank = site.rank(0)
    axis = a.axis % rank
    index = _as_index(site, site.ins[1], "_index")
    size = site.in_shapes[0][axis]
    if a.mode == "wrap":
        index = b.add("Mod", [index, b.const(size, site.name + "_size", np.int64)])
    else:
        index = _clipped(site, index, size)
    index = b.unsqueeze(index, [axis], hint=site.name + "_index_b")
    picked = b.add("GatherElements", [site.ins[0], index], out=site.outs[0] if a.keepdims
                   else None, hint=site.name + "_picked", axis=axis)
    if not a.keepdims:
        b.squeeze(picked, [axis], out=site.outs[0], hint=site.name)


@converts("gather_nd")
def _gather_nd(site: Site) -> None:
    """MXNet's indices hold one coordinate per row of their first axis, ONNX's per entry of
    their last: the index array is transposed accordingly."""
    b, rank = site.b, site.rank(1)
    index = _as_index(site, site.ins[1], "_index")
    if rank > 1:
        index = b.add("Transpose", [index], hint=site.name + "_coords",
                      perm=list(range(1, rank)) + [0])
    b.add("GatherND", [site.ins[0], index], out=site.outs[0])


@converts("one_hot")
def _one_hot(site: Site) -> None:
    a, b = site.attrs, site.b
    index = _as_index(site, site.ins[0], "_index")
    depth = b.const(a.depth, site.name + "_depth", np.int64)
    # ONNX counts a negative index from the end; in MXNet it matches no class
    index = b.add("Where", [b.add("Less", [index, b.const(0, site.name + "_zero", np.int64)]),
                            depth, index], hint=site.name + "_index")
    values = b.const([a.off_value, a.on_value], site.name + "_values", site.out_dtypes[0])
    b.add("OneHot", [index, depth, values], out=site.outs[0], axis=-1)


def _top(site: Site, axis: int, k: int, largest: bool) -> list:
    b = site.b
    return b.add("TopK", [site.ins[0], b.ints([k], site.name + "_k")], hint=site.name + "_top",
                 num_outputs=2, axis=axis, largest=int(largest), sorted=1)


@converts("topk")
def _topk(site: Site) -> None:
    a = site.attrs
    rank = site.rank(0)
    if a.axis is None:
        raise site.refuse("axis=None (top-k of the flattened array) is not exported")
    axis = a.axis % rank
    if a.ret_typ == "mask":
        raise site.refuse("ret_typ='mask' is not exported")
    values, indices = _top(site, axis, a.k, not a.is_ascend)
    if a.ret_typ == "value":
        site.b.add("Identity", [values], out=site.outs[0])
    elif a.ret_typ == "indices":
        _cast_out(site, indices)
    else:
        site.b.add("Identity", [values], out=site.outs[0])
        _cast_out(site, indices, 1)


@converts("sort", "argsort")
def _sort(site: Site) -> None:
    a = site.attrs
    if a.axis is None:
        raise site.refuse("axis=None (sorting the flattened array) is not exported")
    axis = a.axis % site.rank(0)
    values, indices = _top(site, axis, site.fixed_shape(0)[axis], not a.is_ascend)
    if site.node.op.name == "sort":
        site.b.add("Identity", [values], out=site.outs[0])
    else:
        _cast_out(site, indices)


def _lengths(site: Site) -> str:
    return _as_index(site, site.ins[1], "_lengths")


@converts("SequenceMask")
def _sequence_mask(site: Site) -> None:
    a, b = site.attrs, site.b
    if not a.use_sequence_length:
        b.add("Identity", [site.ins[0]], out=site.outs[0])
        return
    rank, axis = site.rank(0), site.attrs.axis % site.rank(0)
    steps = site.fixed_shape(0)[axis]
    lengths = b.unsqueeze(_lengths(site), [axis], hint=site.name + "_lengths_b")
    time = b.const(np.arange(steps, dtype=np.int64).reshape((steps, 1) if axis == 0
                                                            else (1, steps)),
                   site.name + "_steps")
    keep = b.add("Less", [time, lengths], hint=site.name + "_keep")
    if rank > 2:
        keep = b.unsqueeze(keep, list(range(2, rank)), hint=site.name + "_keep_b")
    value = b.const(a.value, site.name + "_value", site.in_dtypes[0])
    b.add("Where", [keep, site.ins[0], value], out=site.outs[0])


@converts("SequenceLast")
def _sequence_last(site: Site) -> None:
    a, b = site.attrs, site.b
    axis = a.axis % site.rank(0)
    if not a.use_sequence_length:
        last = b.const(np.array(-1, np.int64), site.name + "_last")
        b.add("Gather", [site.ins[0], last], out=site.outs[0], axis=axis)
        return
    data = site.ins[0]
    if axis == 0:  # batch first, for GatherND's batch_dims
        perm = [1, 0] + list(range(2, site.rank(0)))
        data = b.add("Transpose", [data], hint=site.name + "_batch_first", perm=perm)
    last = b.add("Sub", [_lengths(site), b.const(1, site.name + "_one", np.int64)])
    index = b.unsqueeze(last, [1], hint=site.name + "_index")
    b.add("GatherND", [data, index], out=site.outs[0], batch_dims=1)


@converts("SequenceReverse")
def _sequence_reverse(site: Site) -> None:
    a, b = site.attrs, site.b
    if a.axis != 0:
        raise site.refuse("axis=%d: only axis 0 is exported" % a.axis)
    if a.use_sequence_length:
        b.add("ReverseSequence", [site.ins[0], _lengths(site)], out=site.outs[0],
              batch_axis=1, time_axis=0)
        return
    end = np.iinfo(np.int64).min
    b.add("Slice", [site.ins[0], b.ints([-1], site.name + "_starts"),
                    b.ints([end], site.name + "_ends"), b.ints([0], site.name + "_axes"),
                    b.ints([-1], site.name + "_steps")], out=site.outs[0])
