"""Writes MXNet 1.9.1 RecordIO files for tests/test_recordio.py (run with MXNet's Python):

    /path/to/mxnet-venv/bin/python tests/data/recordio/gen_recordio_golden.py

plain.rec: RECORDS as written by MXRecordIO (one holds the RecordIO magic number at an
aligned position, which the format splits around; one is empty; lengths not multiples of 4).
indexed.rec/.idx: the same through MXIndexedRecordIO under keys 10, 20, ... headers.rec:
mx.recordio.pack of HEADERS. With `--check DIR`, reads DIR/plain.rec, DIR/indexed.rec/.idx and
DIR/headers.rec (written by minimod) and exits non-zero unless they hold the same records.
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC = struct.pack("<I", 0xCED7230A)

RECORDS = [b"hello", b"", b"abcd" * 3, b"12345678" + MAGIC + b"tail", MAGIC, MAGIC + MAGIC + b"x",
           bytes(range(256)) * 3 + b"end"]
# (flag, label, id, id2, payload); flag 0 with a scalar label, > 0 with that many labels
HEADERS = [((0, 3.0, 7, 0), b"payload"), ((0, -1.5, 1 << 40, 9), b""),
           ((3, [1.0, 2.5, -4.0], 2, 0), b"multi")]


def write(mx, folder):
    rec = mx.recordio.MXRecordIO(os.path.join(folder, "plain.rec"), "w")
    for r in RECORDS:
        rec.write(r)
    rec.close()
    idx = mx.recordio.MXIndexedRecordIO(os.path.join(folder, "indexed.idx"),
                                        os.path.join(folder, "indexed.rec"), "w")
    for i, r in enumerate(RECORDS):
        idx.write_idx(10 * (i + 1), r)
    idx.close()
    rec = mx.recordio.MXRecordIO(os.path.join(folder, "headers.rec"), "w")
    for (flag, label, id_, id2), payload in HEADERS:
        rec.write(mx.recordio.pack(mx.recordio.IRHeader(flag, label, id_, id2), payload))
    rec.close()


def check(mx, folder):
    rec = mx.recordio.MXRecordIO(os.path.join(folder, "plain.rec"), "r")
    got = []
    while True:
        r = rec.read()
        if r is None:
            break
        got.append(r)
    assert got == RECORDS, got
    idx = mx.recordio.MXIndexedRecordIO(os.path.join(folder, "indexed.idx"),
                                        os.path.join(folder, "indexed.rec"), "r")
    assert sorted(idx.keys) == [10 * (i + 1) for i in range(len(RECORDS))], idx.keys
    for i in reversed(range(len(RECORDS))):
        assert idx.read_idx(10 * (i + 1)) == RECORDS[i]
    rec = mx.recordio.MXRecordIO(os.path.join(folder, "headers.rec"), "r")
    for (flag, label, id_, id2), payload in HEADERS:
        header, body = mx.recordio.unpack(rec.read())
        assert (header.flag, header.id, header.id2, body) == (flag, id_, id2, payload), header
        assert list(getattr(header.label, "tolist", lambda: [header.label])()) == (
            label if isinstance(label, list) else [label]), header.label
    print("mxnet reads them")


if __name__ == "__main__":
    import mxnet
    if len(sys.argv) > 2 and sys.argv[1] == "--check":
        check(mxnet, sys.argv[2])
    else:
        write(mxnet, HERE)
