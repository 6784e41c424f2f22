"""MXNet's NDArray list format: golden files from MXNet 1.9.1, every record version, errors."""
import os
import pathlib
import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minimod as mx
import minimod.ndarray as nd
from minimod.base import MXNetError
from minimod.ndarray import serialization as ser

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "data", "golden")
GOLDEN_FILES = ["one.nd", "list.nd", "dtypes.nd", "toy-0001.params", "toy1-0001.params",
                "bool.nd", "sparse.nd"]


def golden(name):
    return os.path.join(GOLDEN, name)


def read_bytes(path):
    with open(path, "rb") as handle:
        return handle.read()


# ----------------------------------------------------------------------------- golden files

def test_one_and_list_values():
    one = nd.load(golden("one.nd"))
    assert isinstance(one, list) and len(one) == 1
    assert one[0].dtype is np.float32 and one[0].asnumpy().tolist() == [7.0]
    first, second = nd.load(golden("list.nd"))
    assert first.dtype is np.float32 and first.asnumpy().tolist() == [1, 2, 3]
    assert second.dtype is np.int64 and second.asnumpy().tolist() == [[1, 1], [1, 1]]


def test_dtypes_dict():
    loaded = nd.load(golden("dtypes.nd"))
    assert list(loaded) == ["float32", "float64", "float16", "uint8", "int32", "int8", "int64"]
    for name, arr in loaded.items():
        assert arr.dtype is np.dtype(name).type
        assert arr.asnumpy().tolist() == [1, 2]


def test_params_match_reference_values():
    loaded = nd.load(golden("toy-0001.params"))
    reference = np.load(golden("toy-0001-reference.npz"))
    assert sorted(loaded) == sorted(reference.files)
    assert list(loaded)[:2] == ["arg:fc1_weight", "arg:fc1_bias"]
    for key in reference.files:
        assert loaded[key].dtype is np.float32
        assert np.array_equal(loaded[key].asnumpy(), reference[key]), key
    adam = nd.load(golden("toy1-0001.params"))
    assert adam["arg:fc1_weight"].shape == (4, 5) and adam["aux:bn1_moving_var"].shape == (4,)


@pytest.mark.parametrize("name", GOLDEN_FILES)
def test_resave_is_byte_identical(name, tmp_path):
    original = read_bytes(golden(name))
    loaded = nd.load(golden(name))
    assert nd.save_to_bytes(loaded) == original
    target = tmp_path / name
    nd.save(str(target), loaded)
    assert read_bytes(target) == original


def test_sparse_records_load_as_sparse_arrays():
    """MXNet's file (its resave is byte-identical, above) keeps its storage types."""
    loaded = nd.load(golden("sparse.nd"))
    assert loaded["rsp"].dtype is np.float32 and loaded["rsp"].stype == "row_sparse"
    assert loaded["rsp"].asnumpy().tolist() == [[0, 0], [1, 2], [0, 0]]
    assert loaded["rsp"].indices.asnumpy().tolist() == [1]
    assert loaded["csr"].dtype is np.float64 and loaded["csr"].stype == "csr"
    assert loaded["csr"].asnumpy().tolist() == [[1, 0], [0, 0], [0, 2]]
    assert loaded["csr"].indptr.asnumpy().tolist() == [0, 1, 1, 2]


def test_sparse_arrays_round_trip_with_their_storage(tmp_path):
    rsp = nd.sparse.row_sparse_array((np.ones((2, 3), "f4"), [0, 4]), shape=(6, 3))
    csr = nd.sparse.csr_matrix(np.array([[0, 2.5], [0, 0], [1, 0]]))
    empty = nd.sparse.zeros("row_sparse", (4, 2))
    nd.save(str(tmp_path / "s.nd"), {"rsp": rsp, "csr": csr, "empty": empty})
    back = nd.load(str(tmp_path / "s.nd"))
    for name, want in (("rsp", rsp), ("csr", csr), ("empty", empty)):
        assert back[name].stype == want.stype and back[name].dtype == want.dtype
        np.testing.assert_array_equal(back[name].asnumpy(), want.asnumpy())


# ----------------------------------------------------------------------------- record versions

def list_file(*records, names=()):
    out = struct.pack("<QQQ", 0x112, 0, len(records)) + b"".join(records)
    out += struct.pack("<Q", len(names))
    for name in names:
        out += struct.pack("<Q", len(name)) + name.encode()
    return out


def test_v1_record():
    values = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float64)
    record = struct.pack("<Ii2qiii", ser.V1_MAGIC, 2, 2, 3, 1, 0, 1) + values.tobytes()
    (arr,) = nd.load_from_bytes(list_file(record))
    assert arr.dtype is np.float64 and arr.asnumpy().tolist() == values.tolist()


def test_pre_v1_legacy_record():
    values = np.array([5, 6], dtype=np.int32)
    record = struct.pack("<IIiii", 1, 2, 1, 0, 4) + values.tobytes()  # magic is ndim = 1
    loaded = nd.load_from_bytes(list_file(record, names=["w"]))
    assert loaded["w"].dtype is np.int32 and loaded["w"].asnumpy().tolist() == [5, 6]


def test_v3_record_scalar_and_none():
    scalar = struct.pack("<Iiiiii", ser.V3_MAGIC, 0, 0, 1, 0, 0) + np.float32(2.5).tobytes()
    none = struct.pack("<Iii", ser.V3_MAGIC, 0, -1)
    with mx.np_shape(True):  # V3 records load only under NumPy shape semantics, as in MXNet
        arr, missing = nd.load_from_bytes(list_file(scalar, none))
    assert arr.shape == () and arr.asnumpy().item() == 2.5
    assert missing is None


def test_v2_none_record_and_read_record_offsets():
    none = struct.pack("<Iii", ser.V2_MAGIC, 0, 0)
    dense = nd.write_record(nd.array([1, 2], dtype="int8"))
    blob = none + dense
    first, offset = nd.read_record(blob, 0)
    assert first is None and offset == len(none)
    second, end = nd.read_record(blob, offset)
    assert end == len(blob) and second.dtype is np.int8 and second.asnumpy().tolist() == [1, 2]


def test_bfloat16_reads_as_float32():
    bits = (np.array([1.5, -2.0], dtype=np.float32).view(np.uint32) >> 16).astype("<u2")
    record = struct.pack("<Iiiqiii", ser.V2_MAGIC, 0, 1, 2, 1, 0, 12) + bits.tobytes()
    arr, _ = nd.read_record(record)
    assert arr.dtype is np.float32 and arr.asnumpy().tolist() == [1.5, -2.0]


def test_write_record_layout_matches_mxnet_hexdump():
    record = nd.write_record(nd.array([7.0]))
    assert record.hex() == "c9fa93f9" "00000000" "01000000" "0100000000000000" \
        "01000000" "00000000" "00000000" "0000e040"


# ----------------------------------------------------------------------------- save forms

def test_save_forms(tmp_path):
    path = tmp_path / "a.nd"
    nd.save(path, nd.ones((2,)))  # a single array is saved as a 1-element list
    assert isinstance(nd.load(path), list)
    nd.save(str(path), (nd.ones((2,)), nd.zeros((1, 2), dtype="uint8")))
    loaded = nd.load(pathlib.Path(path))
    assert [a.dtype for a in loaded] == [np.float32, np.uint8]
    nd.save(str(path), {"b": nd.ones((1,)), "a": nd.zeros((1,))})
    assert list(nd.load(str(path))) == ["b", "a"]
    nd.save(str(path), [])
    assert nd.load(str(path)) == []
    nd.save(str(path), {})
    assert nd.load(str(path)) == []  # no names stored: MXNet also returns a list
    for bad in ([np.ones(2)], {1: nd.ones(2)}, "x", None):
        with pytest.raises(TypeError):
            nd.save(str(path), bad)
    with pytest.raises(MXNetError, match="0-d"):
        nd.save(str(path), [nd.array(3.0)])


def test_save_from_other_context_writes_cpu_record(tmp_path):
    from minimod.context import cpu
    arr = nd.array([7.0], ctx=cpu(3))
    assert nd.save_to_bytes([arr]) == read_bytes(golden("one.nd"))


def test_atomic_write_leaves_no_partial_file(tmp_path, monkeypatch):
    path = tmp_path / "model.params"
    nd.save(str(path), {"w": nd.ones((3,))})
    before = read_bytes(path)

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(ser.os, "replace", broken_replace)
    with pytest.raises(OSError):
        nd.save(str(path), {"w": nd.zeros((3,))})
    monkeypatch.undo()
    assert read_bytes(path) == before
    assert os.listdir(tmp_path) == ["model.params"]


# ----------------------------------------------------------------------------- errors

def test_missing_file_names_the_file(tmp_path):
    with pytest.raises(MXNetError, match=r"nothere\.nd"):
        nd.load(str(tmp_path / "nothere.nd"))


@pytest.mark.parametrize("cut", [0, 5, 16, 24, 30, 40, 60, -1])
def test_truncated_file_names_the_file(tmp_path, cut):
    original = read_bytes(golden("list.nd"))
    path = tmp_path / "cut.nd"
    path.write_bytes(original[:cut] if cut >= 0 else original[:-1])
    with pytest.raises(MXNetError, match=r"cut\.nd.*(truncated|corrupt)"):
        nd.load(str(path))


def test_corrupt_files(tmp_path):
    original = bytearray(read_bytes(golden("list.nd")))
    path = tmp_path / "bad.nd"
    cases = {
        "header": (0, b"\x13"),                     # wrong list magic
        "magic": (24, b"\x00\x00\x00\x7f"),         # bogus record magic
        "stype": (28, b"\x09"),                     # unknown storage type
        "type flag": (52, b"\x63"),                 # unknown dtype flag
    }
    for (offset, patch) in cases.values():
        blob = bytearray(original)
        blob[offset:offset + len(patch)] = patch
        path.write_bytes(bytes(blob))
        with pytest.raises(MXNetError, match=r"bad\.nd"):
            nd.load(str(path))
    path.write_bytes(bytes(original) + b"junk")
    with pytest.raises(MXNetError, match="unexpected bytes"):
        nd.load(str(path))
    names_mismatch = list_file(nd.write_record(nd.ones(1)), names=["a", "b"])
    with pytest.raises(MXNetError, match="2 names for 1 arrays"):
        nd.load_from_bytes(names_mismatch, source="x.nd")


# ----------------------------------------------------------------------------- property

DTYPES = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bool"]


@st.composite
def arrays(draw):
    dtype = draw(st.sampled_from(DTYPES))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=4)))
    raw = np.frombuffer(draw(st.binary(min_size=2048, max_size=2048)), dtype=np.uint8)
    count = int(np.prod(shape))
    if dtype == "bool":
        values = (raw[:count] % 2).astype(bool)
    else:
        itemsize = np.dtype(dtype).itemsize
        values = raw[:count * itemsize].view(dtype)
    return values.reshape(shape)


@given(st.lists(arrays(), max_size=4), st.booleans())
def test_round_trip(values, named):
    data = [nd.array(v, dtype=v.dtype) for v in values]
    payload = {f"p{i}": a for i, a in enumerate(data)} if named and data else data
    blob = nd.save_to_bytes(payload)
    loaded = nd.load_from_bytes(blob)
    items = list(loaded.values()) if isinstance(loaded, dict) else loaded
    assert isinstance(loaded, dict) == (named and bool(data))
    for want, got in zip(values, items):
        assert got.dtype is want.dtype.type and got.shape == want.shape
        assert got.asnumpy().tobytes() == want.tobytes()  # bitwise, NaNs included
    assert nd.save_to_bytes(loaded) == blob
