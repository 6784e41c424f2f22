"""`mx.recordio`: MXNet's RecordIO files (`.rec`, with `.idx` indexes), byte for byte.

A RecordIO file is a sequence of records, each a 4-byte magic number 0xced7230a, a 4-byte
little-endian word holding a continuation flag in its top 3 bits and the payload length in
the other 29, the payload, and zero padding up to a multiple of 4 bytes. A payload that
holds the magic number at a 4-byte-aligned offset is written in parts split around each
occurrence (flags 1 = first, 2 = middle, 3 = last; 0 = a whole record), so a reader can
always resynchronise on the magic; reading joins the parts back with the magic between them.
An index file has one "key<TAB>byte offset" line per record.

`pack`/`unpack` add and remove MXNet's image-record header (`IRHeader`: flag, label, id, id2;
with flag > 0 the label is an array of `flag` floats stored after the header).
`pack_img`/`unpack_img` encode and decode an image payload with OpenCV, as MXNet does; they
need OpenCV (`opencv-python-headless`, the `image` extra).
"""
from __future__ import annotations

import numbers
import os
import struct
from collections import namedtuple
from typing import Any, Optional

import numpy as np

from .base import FileFormatError, MissingDependencyError, MXNetError, atomic_write

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack", "pack_img",
           "unpack_img"]

_MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", _MAGIC)
_LENGTH_BITS = 29


def _encode(cflag: int, length: int) -> bytes:
    return _MAGIC_BYTES + struct.pack("<I", (cflag << _LENGTH_BITS) | length)


def _frame(payload: bytes) -> bytes:
    """The bytes of one record: split around aligned magic numbers, padded to 4 bytes."""
    view = memoryview(payload)
    aligned = np.frombuffer(payload[:len(payload) // 4 * 4], dtype="<u4")
    cuts = (np.flatnonzero(aligned == _MAGIC) * 4).tolist()
    parts, start = [], 0
    for cut in cuts:
        parts.append(_encode(1 if start == 0 else 2, cut - start) + view[start:cut])
        start = cut + 4
    parts.append(_encode(3 if cuts else 0, len(payload) - start) + view[start:])
    parts.append(b"\0" * (-len(payload) % 4))
    return b"".join(parts)


class MXRecordIO:
    """Sequential reading ('r') or writing ('w') of a RecordIO file.

    `write(buf)` appends one record; `read()` returns the next record's bytes, or None at the
    end of the file; `reset()` goes back to the start. Writing goes to a temporary file
    beside `uri`, renamed over it by `close()`, so an interrupted writer never leaves a
    half-written file under the real name.
    """

    def __init__(self, uri: str, flag: str):
        if flag not in ("r", "w"):
            raise ValueError("Invalid flag %s" % flag)
        self.uri = str(uri)
        self.flag = flag
        self.is_open = False
        self._file = None
        self.open()

    def open(self) -> None:
        if self.flag == "w":
            self._tmp = "%s.tmp%d" % (self.uri, os.getpid())
            self._file = open(self._tmp, "wb")
            self.writable = True
        else:
            try:
                self._file = open(self.uri, "rb")
            except OSError as err:
                raise MXNetError("cannot open RecordIO file '%s': %s"
                                 % (self.uri, err.strerror)) from None
            self.writable = False
        self.is_open = True

    def close(self) -> None:
        if not self.is_open:
            return
        self._file.close()
        if self.writable:
            os.replace(self._tmp, self.uri)
        self.is_open = False

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing to report to during interpreter shutdown
            pass

    def __enter__(self) -> MXRecordIO:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __getstate__(self) -> dict:
        """Pickled (for worker processes) as its name and mode; it reopens on unpickling."""
        if self.flag == "w":
            raise MXNetError("a RecordIO writer cannot be pickled")
        return {"uri": self.uri, "flag": self.flag, "pos": self.tell() if self.is_open else 0}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["uri"], state["flag"])
        self._file.seek(state["pos"])

    def reset(self) -> None:
        """Back to the first record (a writer starts the file afresh)."""
        self.close()
        self.open()

    def tell(self) -> int:
        """The byte offset of the next record."""
        return self._file.tell()

    def write(self, buf: bytes) -> None:
        if not self.writable:
            raise MXNetError("RecordIO file '%s' is open for reading" % self.uri)
        self._file.write(_frame(bytes(buf)))

    def _word(self) -> Optional[int]:
        raw = self._file.read(4)
        if not raw:
            return None
        if len(raw) < 4:
            raise FileFormatError("RecordIO file '%s' ends inside a record header at byte %d"
                                  % (self.uri, self._file.tell()))
        return struct.unpack("<I", raw)[0]

    def read(self) -> Optional[bytes]:
        if self.writable:
            raise MXNetError("RecordIO file '%s' is open for writing" % self.uri)
        parts = []
        while True:
            start = self._file.tell()
            magic = self._word()
            if magic is None:
                if parts:
                    raise FileFormatError("RecordIO file '%s' ends inside a split record"
                                          % self.uri)
                return None
            lrec = self._word()
            if magic != _MAGIC or lrec is None:
                raise FileFormatError("RecordIO file '%s' has no record at byte %d (magic %#x)"
                                      % (self.uri, start, magic))
            cflag, length = lrec >> _LENGTH_BITS, lrec & ((1 << _LENGTH_BITS) - 1)
            data = self._file.read(length)
            if len(data) < length:
                raise FileFormatError("RecordIO file '%s' is cut short in the record at byte %d"
                                      % (self.uri, start))
            self._file.read(-length % 4)
            parts.append(data)
            if cflag in (0, 3):
                return _MAGIC_BYTES.join(parts)


class MXIndexedRecordIO(MXRecordIO):
    """RecordIO with random access through an index file of "key<TAB>offset" lines.

    `write_idx(key, buf)` writes a record and indexes it; `read_idx(key)` reads the record
    of `key`; `keys` lists the keys in file order. Keys are converted with `key_type`.
    """

    def __init__(self, idx_path: str, uri: str, flag: str, key_type: Any = int):
        self.idx_path = str(idx_path)
        self.key_type = key_type
        self.idx: dict = {}
        self.keys: list = []
        super().__init__(uri, flag)

    def open(self) -> None:
        super().open()
        self.idx, self.keys = {}, []
        if self.writable:
            return
        try:
            with open(self.idx_path) as f:
                for number, line in enumerate(f, 1):
                    fields = line.strip().split("\t")
                    if not fields[0]:
                        continue
                    if len(fields) != 2:
                        raise FileFormatError("index file '%s' line %d is not 'key<TAB>offset': "
                                              "%r" % (self.idx_path, number, line))
                    key = self.key_type(fields[0])
                    self.idx[key] = int(fields[1])
                    self.keys.append(key)
        except OSError as err:
            raise MXNetError("cannot open index file '%s': %s"
                             % (self.idx_path, err.strerror)) from None

    def close(self) -> None:
        if self.is_open and self.writable:
            atomic_write(self.idx_path, "".join("%s\t%d\n" % (k, self.idx[k])
                                                for k in self.keys))
        super().close()

    def seek(self, idx: Any) -> None:
        """Move to the record of key `idx`."""
        if self.writable:
            raise MXNetError("RecordIO file '%s' is open for writing" % self.uri)
        try:
            self._file.seek(self.idx[self.key_type(idx)])
        except KeyError:
            raise KeyError("key %r is not in the index '%s'" % (idx, self.idx_path)) from None

    def read_idx(self, idx: Any) -> Optional[bytes]:
        self.seek(idx)
        return self.read()

    def write_idx(self, idx: Any, buf: bytes) -> None:
        key = self.key_type(idx)
        self.idx[key] = self.tell()
        self.keys.append(key)
        self.write(buf)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """An image record's header: flag (0, or the number of labels), label (a
float, or the labels when flag > 0), id and id2 (unsigned 64-bit ids)."""
_IR_FORMAT = "IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header: IRHeader, s: bytes) -> bytes:
    """header + payload `s` as one record's bytes; a label array is stored after the header
    (its length in flag, the header's own label 0)."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
        extra = b""
    else:
        labels = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=labels.size, label=0)
        extra = labels.tobytes()
    return struct.pack(_IR_FORMAT, *header) + extra + bytes(s)


def unpack(s: bytes) -> tuple:
    """(IRHeader, payload) of a record packed by `pack`; with flag > 0 the label is a float32
    array."""
    if len(s) < _IR_SIZE:
        raise FileFormatError("a packed record needs a %d-byte header, got %d bytes"
                              % (_IR_SIZE, len(s)))
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4:]
    return header, s


def opencv():
    """The `cv2` module, which MXNet's image functions and iterators use too (pack_img,
    unpack_img, mx.image, ImageRecordIter); MissingDependencyError without it."""
    try:
        import cv2
    except ImportError:
        raise MissingDependencyError("images are encoded and decoded with OpenCV, as MXNet "
                                     "does: pip install opencv-python-headless (or "
                                     "minimod[image])") from None
    return cv2


def pack_img(header: IRHeader, img: np.ndarray, quality: int = 95,
             img_fmt: str = ".jpg") -> bytes:
    """`pack` of the image `img` (a NumPy array, OpenCV's BGR order) encoded as img_fmt."""
    cv2 = opencv()
    fmt = img_fmt.lower()
    params = ([cv2.IMWRITE_JPEG_QUALITY, quality] if fmt in (".jpg", ".jpeg") else
              [cv2.IMWRITE_PNG_COMPRESSION, quality] if fmt == ".png" else [])
    ok, buf = cv2.imencode(img_fmt, img, params)
    if not ok:
        raise MXNetError("pack_img: OpenCV could not encode the image as %s" % img_fmt)
    return pack(header, buf.tobytes())


def unpack_img(s: bytes, iscolor: int = -1) -> tuple:
    """(IRHeader, image array decoded by OpenCV with flag `iscolor`) of a `pack_img` record."""
    header, payload = unpack(s)
    img = opencv().imdecode(np.frombuffer(payload, dtype=np.uint8), iscolor)
    return header, img
