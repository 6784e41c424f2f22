"""mx.recordio against MXNet 1.9.1: files MXNet wrote (tests/data/recordio, by
gen_recordio_golden.py) read back record for record, and files minimod writes are byte-identical
to them (so MXNet reads them too: `gen_recordio_golden.py --check DIR` confirms it)."""
import os
import pickle
import sys

import numpy as np
import pytest

import minimod as mx
from minimod.base import FileFormatError, MissingDependencyError

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "recordio")
sys.path.insert(0, HERE)
import gen_recordio_golden as golden  # noqa: E402


def _read_all(rec):
    out = []
    while True:
        r = rec.read()
        if r is None:
            return out
        out.append(r)


def test_reads_mxnet_files():
    rec = mx.recordio.MXRecordIO(os.path.join(HERE, "plain.rec"), "r")
    assert _read_all(rec) == golden.RECORDS
    rec.reset()
    assert rec.read() == golden.RECORDS[0]
    idx = mx.recordio.MXIndexedRecordIO(os.path.join(HERE, "indexed.idx"),
                                        os.path.join(HERE, "indexed.rec"), "r")
    assert idx.keys == [10 * (i + 1) for i in range(len(golden.RECORDS))]
    for i in reversed(range(len(golden.RECORDS))):
        assert idx.read_idx(10 * (i + 1)) == golden.RECORDS[i]
    rec = mx.recordio.MXRecordIO(os.path.join(HERE, "headers.rec"), "r")
    for (flag, label, id_, id2), payload in golden.HEADERS:
        header, body = mx.recordio.unpack(rec.read())
        assert (header.flag, header.id, header.id2, body) == (flag, id_, id2, payload)
        np.testing.assert_array_equal(header.label, label)


def test_writes_byte_identical_files(tmp_path):
    golden.write(mx, str(tmp_path))  # the generator's writer, run with minimod
    for name in ("plain.rec", "indexed.rec", "indexed.idx", "headers.rec"):
        with open(tmp_path / name, "rb") as a, open(os.path.join(HERE, name), "rb") as b:
            assert a.read() == b.read(), name
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p]


def test_a_reader_pickles_and_resumes(tmp_path):
    rec = mx.recordio.MXRecordIO(os.path.join(HERE, "plain.rec"), "r")
    rec.read()
    clone = pickle.loads(pickle.dumps(rec))
    assert _read_all(clone) == golden.RECORDS[1:]


def test_damaged_files_are_reported(tmp_path):
    raw = open(os.path.join(HERE, "plain.rec"), "rb").read()
    (tmp_path / "cut.rec").write_bytes(raw[:30])
    rec = mx.recordio.MXRecordIO(str(tmp_path / "cut.rec"), "r")
    with pytest.raises(FileFormatError, match="cut short|ends inside"):
        _read_all(rec)
    (tmp_path / "junk.rec").write_bytes(b"not a recordio file")
    with pytest.raises(FileFormatError, match="has no record at byte 0"):
        mx.recordio.MXRecordIO(str(tmp_path / "junk.rec"), "r").read()
    with pytest.raises(mx.base.MXNetError, match="cannot open RecordIO file"):
        mx.recordio.MXRecordIO(str(tmp_path / "missing.rec"), "r")
    with pytest.raises(ValueError, match="Invalid flag"):
        mx.recordio.MXRecordIO(str(tmp_path / "x.rec"), "a")
    with pytest.raises(KeyError, match="key 5 is not in the index"):
        mx.recordio.MXIndexedRecordIO(os.path.join(HERE, "indexed.idx"),
                                      os.path.join(HERE, "indexed.rec"), "r").read_idx(5)


def test_pack_img_needs_opencv_or_round_trips():
    header = mx.recordio.IRHeader(0, 1.0, 3, 0)
    img = (np.arange(48).reshape(4, 4, 3) * 5).astype(np.uint8)
    try:
        import cv2  # noqa: F401
    except ImportError:
        with pytest.raises(MissingDependencyError, match="opencv-python"):
            mx.recordio.pack_img(header, img)
        return
    back_header, back = mx.recordio.unpack_img(mx.recordio.pack_img(header, img,
                                                                    img_fmt=".png"))
    assert back_header.id == 3
    np.testing.assert_array_equal(back, img)
