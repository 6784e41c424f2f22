"""MXNet's binary NDArray list format (`.params`, `mx.nd.save` / `mx.nd.load`), byte for byte.

Layout (all little-endian)::

    file    := u64 0x112 | u64 0 | u64 N | record * N | u64 M | (u64 len | utf-8 name) * M
    record  := u32 magic | ...                           (M is 0 for a list, N for a dict)

Record versions read here:

* V2 (magic 0xF993FAC9), MXNet 1.9.1's default: i32 stype, [sparse: storage shape], shape
  (i32 ndim, i64 dims), i32 dev_type, i32 dev_id, i32 type_flag, [sparse: per aux array i32
  type + shape], raw C-order data, [sparse: raw aux]. ndim 0: a "none" array, nothing follows.
* V3 (0xF993FACA): like V2, written under NumPy shape semantics: ndim -1 is "none", ndim 0 is a
  scalar of shape ().
* V1 (0xF993FAC8): shape (i32 ndim, i64 dims), dev_type, dev_id, type_flag, raw data.
* pre-V1: the magic itself is ndim, followed by u32 dims, dev_type, dev_id, type_flag, data.

Sparse records (row_sparse, csr) load as RowSparseNDArray / CSRNDArray and sparse arrays save
as such records (minimod/ndarray/sparse/records.py), as in MXNet. "none" records load as None.
Records always load into CPU memory and then move to the saved GPU when one exists, else stay
on cpu(0) (MXNet does the same).

Writing: V2 records with dev_type 1 / dev_id 0 (MXNet's `.params` convention), V3 under
`mx.np_shape(True)`. V2 has no scalar shape (MXNet writes a 0-d record it cannot read back), so
minimod refuses 0-d arrays there. As in MXNet, V3 loads only under NumPy shape semantics and V2
only under the legacy ones (else MXNetError says which to use). Files are written to a temporary
file, fsynced and renamed over the target: a crash never leaves a half-written file.

Reading is safe on hostile input. Every size read from a header (array count, ndim, dims, name
lengths) is checked against the bytes that remain before anything is allocated, products of
dims are computed in Python integers (no int64 wrap-around), a dense array can never be larger
than the file, and only regular files are opened (a FIFO or device would hang the reader).
A sparse record's indices are checked against its shape; it is never densified on loading.
Malformed input raises `FileFormatError` (an MXNetError) naming the source and the problem.
"""
from __future__ import annotations

import contextlib
import math
import os
import stat
import struct
from collections.abc import Mapping, Sequence
from typing import Optional, Union

import numpy as np

from .. import backend
from ..base import FileFormatError, MXNetError, atomic_write
from ..context import Context
from ..graph.attrs import STYPE_NAMES
from ..shape_semantics import is_np_shape
from .ndarray import NDArray, wrap
from .sparse import records
from .sparse.arrays import BaseSparseNDArray

__all__ = ["LIST_MAGIC", "V1_MAGIC", "V2_MAGIC", "V3_MAGIC", "load", "load_from_bytes",
           "load_frombuffer", "naming_file", "read_file", "read_record", "save", "save_to_bytes",
           "write_record"]

LIST_MAGIC = 0x112
V1_MAGIC = 0xF993FAC8
V2_MAGIC = 0xF993FAC9
V3_MAGIC = 0xF993FACA

_FLAG_TO_DTYPE = {
    0: np.dtype("<f4"), 1: np.dtype("<f8"), 2: np.dtype("<f2"), 3: np.dtype("u1"),
    4: np.dtype("<i4"), 5: np.dtype("i1"), 6: np.dtype("<i8"), 7: np.dtype("?"),
}
_BF16_FLAG = 12
_DTYPE_TO_FLAG = {dt.type: flag for flag, dt in _FLAG_TO_DTYPE.items()}
_AUX_COUNT = {0: 0, 1: 1, 2: 2}  # default, row_sparse (idx), csr (indptr, idx)

SaveData = Union[NDArray, Sequence[NDArray], Mapping[str, NDArray]]
Loaded = Union[list[Optional[NDArray]], dict[str, Optional[NDArray]]]


class _FormatError(Exception):
    """Malformed bytes; the public functions turn it into MXNetError with the source named."""


class _SemanticsMismatch(Exception):
    """A record written under the other shape semantics (raised as MXNetError)."""


class _Reader:
    def __init__(self, buf: bytes, offset: int = 0):
        self.buf = memoryview(buf)
        self.pos = offset

    def take(self, nbytes: int, what: str) -> memoryview:
        end = self.pos + nbytes
        if nbytes < 0 or end > len(self.buf):
            raise _FormatError(f"truncated at byte {self.pos} while reading {what} "
                               f"({nbytes} bytes needed, {len(self.buf) - self.pos} left)")
        chunk = self.buf[self.pos:end]
        self.pos = end
        return chunk

    def unpack(self, fmt: str, what: str) -> tuple:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))

    def u32(self, what: str) -> int:
        return self.unpack("<I", what)[0]

    def i32(self, what: str) -> int:
        return self.unpack("<i", what)[0]

    def u64(self, what: str) -> int:
        return self.unpack("<Q", what)[0]


# ----------------------------------------------------------------------------- records

def _check_dims(dims: Sequence[int], what: str) -> tuple[int, ...]:
    if any(d < 0 for d in dims):
        raise _FormatError(f"{what} has a negative dimension: {tuple(dims)}")
    if math.prod(max(int(d), 1) for d in dims) >= 1 << 56:  # even an empty array: numpy refuses
        raise _FormatError(f"{what} has implausible dimensions {tuple(dims)}")
    return tuple(int(d) for d in dims)


def _read_shape(reader: _Reader, what: str, max_ndim: int = 64) -> tuple[int, ...] | None:
    """A TShape (i32 ndim, i64 dims); None when ndim is negative (unknown)."""
    ndim = reader.i32(what + " ndim")
    if ndim < 0:
        return None
    if ndim > max_ndim:
        raise _FormatError(f"{what} has implausible ndim {ndim}")
    return _check_dims(reader.unpack(f"<{ndim}q", what + " dims"), what)


def _dtype_of_flag(flag: int) -> np.dtype:
    if flag in _FLAG_TO_DTYPE:
        return _FLAG_TO_DTYPE[flag]
    if flag == _BF16_FLAG:
        return np.dtype("<u2")
    raise _FormatError(f"unknown type flag {flag}")


def _read_values(reader: _Reader, flag: int, shape: tuple[int, ...], what: str) -> np.ndarray:
    dtype = _dtype_of_flag(flag)
    count = math.prod(shape)  # a Python int: a forged shape cannot wrap around to a small size
    raw = reader.take(count * dtype.itemsize, what)  # checked against the bytes left first
    values = np.frombuffer(raw, dtype=dtype).reshape(shape)
    if flag == _BF16_FLAG:  # bfloat16 is the top half of a float32
        return (values.astype(np.uint32) << 16).view(np.float32)
    return values.astype(dtype.newbyteorder("="), copy=True)


def _home(dev_type: int, dev_id: int) -> Context:
    """Where a record loads: its GPU when this machine has it, else cpu(0)."""
    on_gpu = dev_type == 2 and 0 <= dev_id < backend.gpu_count()
    return Context("gpu", dev_id) if on_gpu else Context("cpu", 0)


def _place(values: np.ndarray, dev_type: int, dev_id: int) -> NDArray:
    ctx = _home(dev_type, dev_id)
    return wrap(backend.to_context(values, ctx), ctx)


def _read_legacy(reader: _Reader, magic: int) -> NDArray | None:
    if magic == V1_MAGIC:
        shape = _read_shape(reader, "V1 shape")
    else:
        if magic > 64:
            raise _FormatError(f"bad record magic 0x{magic:08X}")
        shape = _check_dims(reader.unpack(f"<{magic}I", "legacy shape dims"), "legacy shape")
    if not shape:
        return None
    dev_type, dev_id, flag = reader.unpack("<iii", "context and type flag")
    return _place(_read_values(reader, flag, shape, "array data"), dev_type, dev_id)


_SEMANTICS_MISMATCH = {  # keyed by "the record is V3"
    True: "the array was saved under NumPy shape semantics and loads only under them: load "
          "it inside `with mx.np_shape(True):` (or under `@mx.use_np_shape`)",
    False: "the array was saved under the legacy shape semantics and does not load under "
           "NumPy shape semantics: load it inside `with mx.np_shape(False):`"}


def _read(reader: _Reader) -> NDArray | None:
    magic = reader.u32("record magic")
    if magic not in (V2_MAGIC, V3_MAGIC):
        return _read_legacy(reader, magic)
    np_shape = magic == V3_MAGIC
    if np_shape != is_np_shape():
        raise _SemanticsMismatch(_SEMANTICS_MISMATCH[np_shape])
    stype = reader.i32("storage type")
    if stype not in _AUX_COUNT:
        raise _FormatError(f"unknown storage type {stype}")
    n_aux = _AUX_COUNT[stype]
    storage_shape = _read_shape(reader, "storage shape") if n_aux else None
    shape = _read_shape(reader, "shape")
    if shape is None or (not np_shape and len(shape) == 0):
        return None
    dev_type, dev_id, flag = reader.unpack("<iii", "context and type flag")
    if not n_aux:
        return _place(_read_values(reader, flag, shape, "array data"), dev_type, dev_id)
    aux_meta = []
    for k in range(n_aux):
        aux_flag = reader.i32(f"aux {k} type flag")
        aux_meta.append((aux_flag, _read_shape(reader, f"aux {k} shape") or ()))
    values = _read_values(reader, flag, storage_shape or (), f"{STYPE_NAMES[stype]} data")
    aux = [_read_values(reader, f, s, f"aux {k} data") for k, (f, s) in enumerate(aux_meta)]
    try:
        return records.from_record(stype, shape, values, aux, _home(dev_type, dev_id))
    except ValueError as err:
        raise _FormatError(str(err)) from None


@contextlib.contextmanager
def _decoding(source: str, problem: str):
    """Malformed bytes as FileFormatError, a record of the other shape semantics as
    MXNetError, both naming `source`."""
    try:
        yield
    except _FormatError as err:
        raise FileFormatError(f"{source}: {problem}: {err}") from None
    except _SemanticsMismatch as err:
        raise MXNetError(f"{source}: {err}") from None


def read_record(buf: bytes, offset: int = 0,
                source: str = "<bytes>") -> tuple[NDArray | None, int]:
    """Decode one NDArray record of `buf` starting at `offset`.

    Returns (array or None for a "none" record, offset just past the record). Raises
    MXNetError naming `source` when the bytes are truncated or malformed.
    """
    reader = _Reader(buf, offset)
    with _decoding(source, "malformed NDArray record"):
        array = _read(reader)
    return array, reader.pos


def _flag_of(data: np.ndarray) -> int:
    flag = _DTYPE_TO_FLAG.get(data.dtype.type)
    if flag is None:
        raise MXNetError("cannot save dtype {}: MXNet files hold {}".format(
            data.dtype.name, ", ".join(dt.name for dt in _FLAG_TO_DTYPE.values())))
    return flag


def _shape_bytes(shape: tuple) -> bytes:
    return struct.pack(f"<i{len(shape)}q", len(shape), *shape)


def _raw(data: np.ndarray, flag: int) -> bytes:
    return np.ascontiguousarray(data, dtype=_FLAG_TO_DTYPE[flag]).tobytes()


def write_record(array: NDArray) -> bytes:
    """One record for `array` (dev_type 1, dev_id 0), as MXNet writes it: V2, or V3 under
    NumPy shape semantics; a sparse array keeps its storage type and components."""
    if isinstance(array, BaseSparseNDArray):
        stype, data, aux = records.record_parts(array)
        shape = array.shape
    else:
        data = backend.asnumpy(array._data if isinstance(array, NDArray) else array)
        stype, aux, shape = 0, [], data.shape
    flag = _flag_of(data)
    np_shape = is_np_shape()
    if len(shape) == 0 and not np_shape:
        raise MXNetError("cannot save a 0-d array under the legacy shape semantics (their "
                         "record has no scalar shape): save it under `mx.np_shape(True)` or "
                         "reshape it to (1,)")
    parts = [struct.pack("<Ii", V3_MAGIC if np_shape else V2_MAGIC, stype)]
    if stype:
        parts.append(_shape_bytes(data.shape))  # the storage shape
    parts += [_shape_bytes(shape), struct.pack("<iii", 1, 0, flag)]
    parts += [struct.pack("<i", _flag_of(a)) + _shape_bytes(a.shape) for a in aux]
    parts += [_raw(data, flag)] + [_raw(a, _flag_of(a)) for a in aux]
    return b"".join(parts)


# ----------------------------------------------------------------------------- lists

def _normalize_save_data(data: SaveData) -> tuple[list[NDArray], list[str]]:
    if isinstance(data, NDArray):
        return [data], []
    if isinstance(data, Mapping):
        if not all(isinstance(k, str) and isinstance(v, NDArray) for k, v in data.items()):
            raise TypeError("save only accepts a dict str->NDArray or a list of NDArray")
        return list(data.values()), list(data.keys())
    if isinstance(data, (list, tuple)) and all(isinstance(v, NDArray) for v in data):
        return list(data), []
    raise TypeError("save only accepts a dict str->NDArray or a list of NDArray, got "
                    f"{type(data).__name__}")


def save_to_bytes(data: SaveData) -> bytes:
    """The bytes `save` writes for `data` (an NDArray, a list of them, or a dict str->NDArray)."""
    arrays, names = _normalize_save_data(data)
    parts = [struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays))]
    parts.extend(write_record(a) for a in arrays)
    parts.append(struct.pack("<Q", len(names)))
    for name in names:
        encoded = name.encode("utf-8")
        parts.append(struct.pack("<Q", len(encoded)) + encoded)
    return b"".join(parts)


def load_from_bytes(buf: bytes, source: str = "<bytes>") -> Loaded:
    """Decode an NDArray list file: a dict when names are stored, else a list.

    Raises MXNetError naming `source` for a wrong header, truncation, trailing garbage or a
    name count that does not match the array count.
    """
    reader = _Reader(buf)
    with _decoding(source, "corrupt NDArray file"):
        magic, _reserved = reader.unpack("<QQ", "file header")
        if magic != LIST_MAGIC:
            raise _FormatError(f"not an NDArray list file (header 0x{magic:X}, "
                               f"expected 0x{LIST_MAGIC:X})")
        count = reader.u64("array count")
        if count * 4 > len(buf) - reader.pos:  # every record takes at least its 4-byte magic
            raise _FormatError(f"array count {count} does not fit in the "
                               f"{len(buf) - reader.pos} bytes left")
        arrays = [_read(reader) for _ in range(count)]
        n_names = reader.u64("name count")
        if n_names not in (0, count):
            raise _FormatError(f"{n_names} names for {count} arrays")
        names = []
        for k in range(n_names):
            length = reader.u64(f"length of name {k}")
            try:
                names.append(bytes(reader.take(length, f"name {k}")).decode("utf-8"))
            except UnicodeDecodeError as err:
                raise _FormatError(f"name {k} is not UTF-8") from err
        if reader.pos != len(buf):
            raise _FormatError(f"{len(buf) - reader.pos} unexpected bytes after the last name")
    return dict(zip(names, arrays)) if names else arrays


def load_frombuffer(buf: bytes | bytearray | memoryview) -> Loaded:
    """`mx.nd.load_frombuffer`: decode the bytes of an NDArray list file held in memory (what
    `save` writes, read back with `open(f, 'rb').read()`): a dict when names are stored, else
    a list. A truncated or otherwise corrupt buffer raises FileFormatError (an MXNetError)."""
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise TypeError("load_frombuffer needs the file's bytes, got %s" % type(buf).__name__)
    return load_from_bytes(bytes(buf), source="buffer")


def save(fname: str | os.PathLike, data: SaveData) -> None:
    """Write `data` to `fname` in MXNet's format (atomically: temp file, then rename)."""
    atomic_write(fname, save_to_bytes(data))


def read_file(fname: str | os.PathLike, what: str = "file") -> bytes:
    """The bytes of the regular file `fname`; FileFormatError naming it (and `what` it should
    be) when it is missing, unreadable, or not a regular file (a FIFO or device would hang)."""
    path = os.fspath(fname)
    try:
        # stat before open: opening a FIFO for reading blocks until a writer appears
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise FileFormatError(f"cannot read {what} {path!r}: not a regular file")
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as err:
        raise FileFormatError(f"cannot read {what} {path!r}: {err.strerror}") from None


def load(fname: str | os.PathLike) -> Loaded:
    """Read an NDArray list file written by MXNet or minimod: a dict if names are stored, else
    a list. Missing or corrupt files raise FileFormatError (an MXNetError) naming the file."""
    path = os.fspath(fname)
    return load_from_bytes(read_file(path, "NDArray file"), source=repr(path))


@contextlib.contextmanager
def naming_file(fname: str | os.PathLike):
    """Inside this block, an MXNetError that does not yet name `fname` is re-raised with the
    file's name in front (a plain MXNetError becomes a FileFormatError)."""
    path = repr(os.fspath(fname))
    try:
        yield
    except MXNetError as err:
        if path in str(err):
            raise
        kind = FileFormatError if type(err) is MXNetError else type(err)
        raise kind(f"{path}: {err}") from None
