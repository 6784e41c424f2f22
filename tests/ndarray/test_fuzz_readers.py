"""Fuzzing the three file readers: `.params` (mx.nd.load), `.states` (the optimizer-state
reader, native and MXNet pickle) and symbol JSON.

Each example starts from a small corpus of valid files, damages it (truncation, byte flips,
forged 32/64-bit sizes written over headers, JSON values swapped for others), and reads it.
What must hold for every input:

* the reader returns or raises MXNetError; nothing else escapes;
* it allocates at most a small multiple of the file's size (tracemalloc peak during the read
  <= 4 x file size + 1 MiB; numpy arrays are traced too);
* it returns quickly (well under a second; no input makes it loop).

The corpus is kept small and the number of examples comes from the hypothesis profile
(`ci`: 15 per test, `fuzz`: 2000), so CI stays fast. The hand-written hostile cases below pin
the specific attacks: forged counts and dimensions, sparse records of huge shapes (loaded
without their dense form) or with indices past their shape, pickles that name code or forge
lengths, FIFOs.
"""
import json
import os
import pickle
import struct
import time
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minimod as mx
from minimod import optimizer as opt
from minimod.base import FileFormatError, MXNetError
from minimod.ndarray import serialization

SLACK = 1 << 20


# ---------------------------------------------------------------------------- the corpus

def _record(fmt_args: bytes, data: bytes = b"") -> bytes:
    return fmt_args + data


def _sparse_row_record() -> bytes:
    """A V2 row_sparse record: shape (6, 2), rows 1 and 4 stored."""
    values = np.arange(4, dtype="<f4").tobytes()
    rows = np.array([1, 4], dtype="<i8").tobytes()
    return (struct.pack("<Ii", serialization.V2_MAGIC, 1)
            + struct.pack("<iqq", 2, 2, 2)          # storage shape (2, 2)
            + struct.pack("<iqq", 2, 6, 2)          # shape (6, 2)
            + struct.pack("<iii", 1, 0, 0)          # cpu, float32
            + struct.pack("<i", 6) + struct.pack("<iq", 1, 2)   # aux: int64 idx, shape (2,)
            + values + rows)


def _csr_record() -> bytes:
    """A V2 csr record: shape (3, 4) with 3 stored values."""
    values = np.array([1, 2, 3], dtype="<f4").tobytes()
    indptr = np.array([0, 1, 1, 3], dtype="<i8").tobytes()
    cols = np.array([2, 0, 3], dtype="<i8").tobytes()
    return (struct.pack("<Ii", serialization.V2_MAGIC, 2)
            + struct.pack("<iq", 1, 3)              # storage shape (3,)
            + struct.pack("<iqq", 2, 3, 4)          # shape (3, 4)
            + struct.pack("<iii", 1, 0, 0)
            + struct.pack("<i", 6) + struct.pack("<iq", 1, 4)   # indptr
            + struct.pack("<i", 6) + struct.pack("<iq", 1, 3)   # indices
            + values + indptr + cols)


def _list_file(records, names=()) -> bytes:
    out = struct.pack("<QQQ", serialization.LIST_MAGIC, 0, len(records)) + b"".join(records)
    out += struct.pack("<Q", len(names))
    for name in names:
        out += struct.pack("<Q", len(name)) + name.encode()
    return out


def _params_corpus() -> list:
    dense = mx.nd.save_to_bytes({
        "arg:fc_weight": mx.nd.array(np.arange(6).reshape(2, 3)),
        "arg:fc_bias": mx.nd.array([1.0, 2.0]),
        "aux:bn_moving_var": mx.nd.array(np.ones(3, dtype=np.float16), dtype=np.float16),
    })
    as_list = mx.nd.save_to_bytes([mx.nd.array([1, 2, 3], dtype=np.int32),
                                   mx.nd.array(np.eye(2), dtype=np.float64)])
    v1 = _list_file([struct.pack("<Iiqqiii", serialization.V1_MAGIC, 2, 2, 2, 1, 0, 0)
                     + np.ones(4, "<f4").tobytes()])
    sparse = _list_file([_sparse_row_record(), _csr_record()], ["rs", "csr"])
    return [dense, as_list, v1, sparse]


def _states_corpus() -> list:
    updater = opt.get_updater(opt.create("adam"))
    updater(0, mx.nd.ones((3,)), mx.nd.ones((3,)))
    updater(1, mx.nd.ones((2, 2)), mx.nd.ones((2, 2)))
    momentum = opt.get_updater(opt.create("sgd", momentum=0.9))
    momentum("fc_weight", mx.nd.ones((2,)), mx.nd.ones((2,)))
    return [updater.get_states(), updater.get_states_mxnet(),
            momentum.get_states(dump_optimizer=True)]


def _symbol_corpus() -> list:
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv")
    net = mx.sym.BatchNorm(net, name="bn")
    net = mx.sym.FullyConnected(mx.sym.Flatten(net), num_hidden=3, name="fc")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    return [net.tojson()]


PARAMS = _params_corpus()
STATES = _states_corpus()
SYMBOLS = _symbol_corpus()


def test_corpus_is_valid():
    """The mutations start from files the readers accept."""
    for data in PARAMS:
        mx.nd.load_from_bytes(data)
    for data in STATES:
        opt.load_states(data)
    for text in SYMBOLS:
        mx.sym.load_json(text)
    loaded = mx.nd.load_from_bytes(PARAMS[3])
    assert loaded["rs"].asnumpy()[4].tolist() == [2.0, 3.0]
    assert loaded["csr"].asnumpy().tolist() == [[0, 0, 1, 0], [0, 0, 0, 0], [2, 0, 0, 3]]


# ---------------------------------------------------------------------------- mutations

FORGED = [0, 1, 2, 63, 64, 65, 255, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 40,
          2 ** 62, 2 ** 63, 2 ** 64 - 1]


@st.composite
def damaged(draw, corpus):
    data = bytearray(draw(st.sampled_from(corpus)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["truncate", "flip", "forge32", "forge64", "splice"]))
        if not data:
            break
        pos = draw(st.integers(0, len(data) - 1))
        if kind == "truncate":
            del data[pos:]
        elif kind == "flip":
            data[pos] = draw(st.integers(0, 255))
        elif kind == "forge32":
            value = draw(st.sampled_from(FORGED)) & 0xFFFFFFFF
            data[pos:pos + 4] = struct.pack("<I", value)
        elif kind == "forge64":
            value = draw(st.sampled_from(FORGED))
            data[pos:pos + 8] = struct.pack("<Q", value)
        else:
            data[pos:pos] = draw(st.binary(max_size=16))
    return bytes(data)


def _read_safely(reader, data):
    """Run `reader(data)`: only MXNetError may escape, with bounded memory and time."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        reader(data)
    except MXNetError:
        pass
    finally:
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak <= 4 * len(data) + SLACK, "allocated %d bytes for a %d-byte file" % (
        peak, len(data))
    assert elapsed < 2.0, "took %.2f s" % elapsed


@given(damaged(PARAMS))
def test_params_reader_fuzz(data):
    _read_safely(mx.nd.load_from_bytes, data)


@given(damaged(STATES))
def test_states_reader_fuzz(data):
    _read_safely(opt.load_states, data)


@given(damaged(STATES))
def test_states_into_updater_fuzz(data):
    def load(payload):
        updater = opt.get_updater(opt.create("adam"))
        updater.set_states(payload, restore_counters=True)
        updater.set_states_by_name(payload, {0: "a", 1: "b"}, saved_idx2name={0: "a", 1: "b"},
                                   key_devices={0: 0, 1: 0})
    _read_safely(load, data)


@given(damaged([s.encode() for s in SYMBOLS]))
def test_symbol_reader_fuzz_bytes(data):
    _read_safely(mx.sym.load_json, data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats()
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12)


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _paths(value, prefix + (i,))


@given(st.data())
def test_symbol_reader_fuzz_structure(data):
    """Replace one value anywhere in a valid symbol JSON with an arbitrary JSON value."""
    doc = json.loads(SYMBOLS[0])
    paths = [p for p in _paths(doc) if p]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        target = doc
        try:
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = data.draw(json_values)
        except (KeyError, IndexError, TypeError):
            continue
    _read_safely(mx.sym.load_json, json.dumps(doc))


# ---------------------------------------------------------------------------- hostile files

def test_every_truncation_of_a_params_file_is_refused():
    for data in PARAMS:
        for cut in range(len(data)):
            with pytest.raises(FileFormatError):
                mx.nd.load_from_bytes(data[:cut])


def test_forged_array_count_is_refused_before_reading():
    data = bytearray(PARAMS[0])
    data[16:24] = struct.pack("<Q", 2 ** 60)
    with pytest.raises(FileFormatError, match="array count 1152921504606846976 does not fit"):
        mx.nd.load_from_bytes(bytes(data))


def test_forged_dims_are_checked_against_the_file_length():
    def record(*dims):
        return struct.pack("<Iii%dqiii" % len(dims), serialization.V2_MAGIC, 0, len(dims),
                           *dims, 1, 0, 0)
    # 4 TiB claimed, a few bytes present: refused before any allocation
    with pytest.raises(FileFormatError, match="truncated .* array data .4398046511104 bytes"):
        mx.nd.load_from_bytes(_list_file([record(2 ** 20, 2 ** 20)]))
    # 2**32 x 2**32 x 4 bytes wraps to 0 in int64; sizes are Python integers, and refused
    with pytest.raises(FileFormatError, match="implausible dimensions"):
        mx.nd.load_from_bytes(_list_file([record(2 ** 32, 2 ** 32)]))
    # an empty array with one absurd dimension (numpy cannot even describe it)
    with pytest.raises(FileFormatError, match="implausible dimensions"):
        mx.nd.load_from_bytes(_list_file([record(2 ** 62, 0)]))


def test_a_sparse_record_of_a_huge_shape_loads_without_its_dense_form():
    record = bytearray(_sparse_row_record())
    shape_at = 4 + 4 + 20  # magic, stype, storage shape (i32 + 2 x i64)
    record[shape_at:shape_at + 20] = struct.pack("<iqq", 2, 2 ** 40, 2)
    tracemalloc.start()
    (loaded,) = mx.nd.load_from_bytes(_list_file([bytes(record)]))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert loaded.stype == "row_sparse" and loaded.shape == (2 ** 40, 2)
    assert peak < SLACK


def test_a_row_sparse_record_with_an_index_past_its_rows_is_refused():
    record = bytearray(_sparse_row_record())
    record[-8:] = struct.pack("<q", 6)  # the second stored row: 6 of rows 0..5
    with pytest.raises(FileFormatError, match=r"row_sparse record: an index is outside \[0, 6\)"):
        mx.nd.load_from_bytes(_list_file([bytes(record)]))


def test_csr_with_bad_column_index_is_refused():
    record = bytearray(_csr_record())
    record[-8:] = struct.pack("<q", 99)  # last column index
    with pytest.raises(FileFormatError, match="column index is outside"):
        mx.nd.load_from_bytes(_list_file([bytes(record)]))


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "model-0001.params"
    os.mkfifo(fifo)
    start = time.perf_counter()
    with pytest.raises(FileFormatError, match="not a regular file"):
        mx.nd.load(str(fifo))
    with pytest.raises(FileFormatError, match="not a regular file"):
        mx.sym.load(str(fifo))
    assert time.perf_counter() - start < 1.0


class _RunsCode:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_hostile_states_pickle_is_refused_without_running(tmp_path):
    witness = tmp_path / "pwned"
    payload = pickle.dumps({0: _RunsCode(str(witness))}, protocol=2)
    with pytest.raises(opt.UnsafeStatesError, match=r"refused global _?io\.open"):
        opt.load_states(payload)
    assert not witness.exists()
    os_system = b"\x80\x02cos\nsystem\nq\x00X\x04\x00\x00\x00trueq\x01\x85q\x02Rq\x03."
    with pytest.raises(opt.UnsafeStatesError, match="refused global os.system"):
        opt.load_states(os_system)


def test_pickle_with_forged_lengths_allocates_nothing_large():
    forged_bytes8 = b"\x80\x04\x8e" + struct.pack("<Q", 2 ** 40) + b"abc."
    calls_bytes_with_int = (b"\x80\x02c__builtin__\nbytes\nJ\x00\xe4\x0bT\x85R}q\x00."
                            .replace(b"__builtin__", b"builtins"))
    nd_with_int_handle = (b"\x80\x02cmxnet.ndarray.ndarray\nNDArray\nN\x85R}X\x06\x00\x00\x00"
                          b"handleJ\x00\xe4\x0bTsb.")
    # the unpickler sizes its memo table by the index it is given (found by this fuzzer)
    forged_memo_index = b"\x80\x02}r\xff\xff\xff\x3f."
    for payload in (forged_bytes8, calls_bytes_with_int, nd_with_int_handle, forged_memo_index):
        _read_safely(opt.load_states, payload)
        with pytest.raises(MXNetError):
            opt.load_states(payload)


def test_deeply_nested_or_huge_json_is_refused():
    with pytest.raises(mx.base.GraphError, match="does not parse"):
        mx.sym.load_json("[" * 100000 + "]" * 100000)
    with pytest.raises(mx.base.GraphError, match="does not parse"):
        mx.sym.load_json('{"nodes": [], "heads": [[' + "9" * 5000 + ', 0, 0]]}')


def test_symbol_file_errors_name_the_file(tmp_path):
    path = tmp_path / "net-symbol.json"
    path.write_bytes(b'{"nodes": [{"op": "null", "name": "x", "inputs": []}], "heads": [[0, 5]]}')
    with pytest.raises(mx.base.GraphError, match="net-symbol.json.*output 5 of node 'x'"):
        mx.sym.load(str(path))
    path.write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(mx.base.GraphError, match="net-symbol.json.*not UTF-8"):
        mx.sym.load(str(path))
