"""NDArray: attributes, dtype rules, views, arithmetic, repr, pickling and the routines.

Expected values marked "MXNet" were observed with MXNet 1.9.1 (see
tests/data/golden/behaviour.json, written by tests/data/golden/check_with_mxnet.py).
"""
import json
import os
import pickle

import numpy as np
import pytest

import minimod.ndarray as nd
import minimod.random as mxrandom
from minimod import backend
from minimod.base import DTypeError, MXNetError, ShapeError
from minimod.context import cpu

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "data", "golden")


@pytest.fixture(scope="module")
def behaviour():
    with open(os.path.join(GOLDEN, "behaviour.json")) as handle:
        return json.load(handle)


def a23():
    return nd.arange(6).reshape((2, 3))


# ----------------------------------------------------------------------------- construction

def test_array_dtype_defaults_to_float32_except_for_ndarray_source():
    assert nd.array([1, 2]).dtype is np.float32
    assert nd.array(np.arange(3)).dtype is np.float32  # int64 -> float32 (MXNet)
    assert nd.array(np.arange(3.0)).dtype is np.float32  # float64 -> float32
    assert nd.array(np.ones(2, dtype=np.int32)).dtype is np.float32
    src = nd.array([1, 2], dtype="int32")
    assert nd.array(src).dtype is np.int32
    assert nd.array(src, dtype="float64").dtype is np.float64
    assert nd.array([1, 2], dtype=np.int8).dtype is np.int8


def test_array_copies_its_source():
    host = np.zeros(3, dtype=np.float32)
    arr = nd.array(host)
    host[0] = 5
    assert arr.asnumpy()[0] == 0
    src = nd.ones(2)
    dup = nd.array(src)
    src[:] = 3
    assert dup.asnumpy().tolist() == [1, 1]


def test_array_rejects_non_array_like():
    with pytest.raises(TypeError):
        nd.array({"a": 1})


def test_creation_functions():
    assert nd.zeros((2, 3)).asnumpy().sum() == 0
    assert nd.zeros(3).shape == (3,)
    z = nd.zeros(shape=(2,), dtype="int32", stype="default")
    assert z.dtype is np.int32 and z.stype == "default"
    assert nd.ones((2,), dtype=np.float16).dtype is np.float16
    assert nd.empty((2, 2)).dtype is np.float32
    assert nd.full((2,), 3).asnumpy().tolist() == [3.0, 3.0]
    assert nd.full((2,), 3, dtype="int32").dtype is np.int32
    assert nd.zeros((2, 2), stype="row_sparse").stype == "row_sparse"
    with pytest.raises(MXNetError, match="zeros and empty only"):
        nd.ones((2, 2), stype="csr")
    with pytest.raises(DTypeError):
        nd.zeros((2,), dtype="complex64")


def test_arange():
    assert nd.arange(5).dtype is np.float32
    assert nd.arange(1, 5, 2).asnumpy().tolist() == [1, 3]
    assert nd.arange(0, 1, 0.25).asnumpy().tolist() == [0, 0.25, 0.5, 0.75]
    assert nd.arange(0, 3, repeat=2).asnumpy().tolist() == [0, 0, 1, 1, 2, 2]
    assert nd.arange(3, dtype="int32").dtype is np.int32


def test_wrapping_constructor_does_not_copy():
    buf = np.zeros((2, 3), dtype=np.float32)
    arr = nd.NDArray(buf, cpu(1))
    assert arr._data is buf and arr.context == cpu(1)
    arr[:] = 2
    arr += 1
    arr[0, 1] = 7
    assert buf.tolist() == [[3, 7, 3], [3, 3, 3]]
    with pytest.raises(TypeError):
        nd.NDArray([1, 2])
    assert nd.NDArray(np.ones(1)).context == cpu(0)


# ----------------------------------------------------------------------------- attributes

def test_attributes():
    a = a23()
    assert a.shape == (2, 3) and a.size == 6 and a.ndim == 2
    assert a.dtype is np.float32 and isinstance(a.dtype, type)
    assert a.context == cpu(0) and a.ctx == cpu(0)
    assert a.stype == "default" and a.handle is not None and a.writable
    assert a.grad is None
    assert a.T.shape == (3, 2) and nd.ones((2, 3, 4)).T.shape == (4, 3, 2)
    assert len(a) == 2
    assert type(a).__module__ == "minimod.ndarray.ndarray"


def test_repr_matches_mxnet(behaviour):
    assert repr(a23()) == behaviour["repr_2x3"]
    assert repr(nd.array([1, 2], dtype="int32")) == behaviour["repr_int"]
    assert repr(nd.array([1.5, 2], dtype="float16")) == behaviour["repr_f16"]
    assert repr(nd.zeros((2,), ctx=cpu(1))).endswith("<NDArray 2 @cpu(1)>")
    assert str(a23()) == repr(a23())


def test_asnumpy_asscalar_item():
    a = a23()
    host = a.asnumpy()
    host[0, 0] = 9
    assert a.asnumpy()[0, 0] == 0  # asnumpy copies
    s = nd.array([5]).asscalar()
    assert s == 5 and type(s) is np.float32
    assert nd.array([5], dtype="int32").item() == 5
    with pytest.raises(ValueError, match="not a scalar"):
        a.asscalar()
    assert np.asarray(a).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert np.asarray(a, dtype=np.int64).dtype == np.int64


def test_bool():
    assert not nd.array([0])
    assert nd.array([2])
    assert not nd.array(np.zeros((0,)))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(a23())


def test_copy_copyto_as_in_context_astype():
    a = a23()
    b = a.copy()
    b[:] = 0
    assert a.asnumpy().sum() == 15
    dst = nd.zeros((2, 3), dtype="int32")
    assert a.copyto(dst) is dst and dst.dtype is np.int32
    assert dst.asnumpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    moved = a.copyto(cpu(1))
    assert moved.context == cpu(1) and moved.asnumpy().tolist() == a.asnumpy().tolist()
    with pytest.raises(MXNetError, match=r"\(2, 3\).*\(3, 2\)"):
        a.copyto(nd.zeros((3, 2)))
    assert a.as_in_context(cpu(0)) is a
    other = a.as_in_context(cpu(1))
    assert other is not a and other.context == cpu(1)
    assert a.astype("float32", copy=False) is a
    assert a.astype("float32") is not a
    assert a.astype(np.int32).dtype is np.int32
    assert a.tostype("default").asnumpy().tolist() == a.asnumpy().tolist()
    assert a.tostype("csr").stype == "csr"
    with pytest.raises(MXNetError, match="unknown storage type"):
        a.tostype("coo")
    a.wait_to_read()
    nd.waitall()


def test_reshape_forms_and_codes():
    x = nd.ones((2, 3, 4))
    assert x.reshape((6, 4)).shape == (6, 4)
    assert x.reshape(6, 4).shape == (6, 4)
    assert x.reshape(shape=(4, 6)).shape == (4, 6)
    assert x.reshape((0, -1)).shape == (2, 12)
    assert x.reshape((-2,)).shape == (2, 3, 4)
    assert x.reshape((-3, 4)).shape == (6, 4)
    assert x.reshape((2, -4, 1, 3, 4)).shape == (2, 1, 3, 4)
    assert x.reshape((-1, 0), reverse=True).shape == (6, 4)
    with pytest.raises(ShapeError):
        x.reshape((5, 5))
    view = x.reshape((24,))
    view[:] = 3
    assert x.asnumpy().min() == 3  # reshape shares memory


# ----------------------------------------------------------------------------- indexing

def test_getitem_shapes_match_mxnet():
    a = a23()
    assert a[1].shape == (3,)
    assert a[1, 2].shape == (1,) and a[1, 2].asscalar() == 5
    assert a[:, 1].shape == (2,)
    assert a[1:2, 1:3].shape == (1, 2)
    assert a[-1].asnumpy().tolist() == [3, 4, 5]
    assert a[::2].shape == (1, 3)
    assert [x.shape for x in nd.array([1, 2])] == [(1,), (1,)]
    assert [x.asnumpy().tolist() for x in a] == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(IndexError):
        a[2, 0]


def test_basic_slices_are_views():
    a = a23()
    a[0:1][:] = 9
    row = a[1]
    row[:] = 7
    a[1, 2][:] = 8
    assert a.asnumpy().tolist() == [[9, 9, 9], [7, 7, 8]]


def test_advanced_index_with_ndarray():
    a = a23()
    assert a[nd.array([1, 0])].asnumpy().tolist() == [[3, 4, 5], [0, 1, 2]]


def test_setitem_forms():
    a = nd.zeros((2, 3))
    a[:] = 1
    a[0] = nd.array([1, 2, 3])
    a[1, 1] = 42
    a[:, 0] = np.array([10, 11])
    a[1:2] = 5
    assert a.asnumpy().tolist() == [[10, 2, 3], [5, 5, 5]]
    a[:] = nd.arange(6, ctx=cpu(1)).reshape((2, 3))  # other context: copied over
    assert a.asnumpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ShapeError):
        a[:] = nd.ones((4,))
    frozen = nd.NDArray(np.zeros(2, dtype=np.float32), cpu(0), writable=False)
    with pytest.raises(MXNetError):
        frozen[:] = 1


def test_an_element_takes_a_one_element_value():
    """a[i] of a vector is a (1,) NDArray, so MXNet writes a one-element value there (NumPy 2
    refuses an array for an element); a longer value is still refused by shape."""
    a = nd.zeros((2, 3))
    a[1, 2] = nd.array([7])
    a[0, 0] = np.array([5.0])
    v = nd.zeros((3,))
    v[0] = nd.array([4])
    assert a.asnumpy().tolist() == [[5, 0, 0], [0, 0, 7]] and v.asnumpy().tolist() == [4, 0, 0]
    with pytest.raises(ShapeError, match="shape \\(2,\\) to index 0"):
        v[0] = nd.array([1, 2])


@pytest.mark.parametrize("shape,key", [
    ((5, 1, 2), ([-5],)), ((2, 2), ([-1, -1],)), ((4, 4, 3), ([3, -3], slice(3, 5, 2))),
    ((5, 1), ([2, 1], -1)), ((3, 5), ([1, -3, -2], None)), ((3, 2, 3), ([1], [1, 0, -1], None)),
    ((5, 3, 2, 4), (Ellipsis, [-3, 2, 1], None))])
def test_advanced_indexing_is_numpys(shape, key):
    """Negative entries of a list index, and a new axis after list indices, as NumPy has
    them (MXNet 1.9.1 writes nothing for a negative list entry, or crashes, and puts the new
    axis first: docs/compatibility.md); reading and writing through the same key."""
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    a = nd.array(x)
    assert a[key].shape == x[key].shape
    np.testing.assert_array_equal(a[key].asnumpy(), x[key])
    a[key] = -1.0
    x[key] = -1.0
    np.testing.assert_array_equal(a.asnumpy(), x)


# ----------------------------------------------------------------------------- arithmetic

def test_arithmetic_and_broadcasting():
    a = a23()
    b = nd.ones((3,))
    assert (a + b).asnumpy().tolist() == [[1, 2, 3], [4, 5, 6]]
    assert (a - nd.ones((1, 3))).shape == (2, 3)
    assert (a * 2).asnumpy()[1, 2] == 10
    assert (a / 2).asnumpy()[0, 1] == 0.5
    assert (2 ** nd.array([1, 2])).asnumpy().tolist() == [2, 4]
    assert (nd.array([1, 2]) ** 2).asnumpy().tolist() == [1, 4]
    assert (1 - a).asnumpy()[0].tolist() == [1, 0, -1]
    assert (6 / nd.array([2, 3])).asnumpy().tolist() == [3, 2]
    assert (-nd.array([1, -2])).asnumpy().tolist() == [-1, 2]
    assert abs(nd.array([1, -2])).asnumpy().tolist() == [1, 2]
    assert nd.abs(nd.array([1, -2])).asnumpy().tolist() == [1, 2]
    assert sum([a, a, a]).asnumpy().tolist() == [[0, 3, 6], [9, 12, 15]]
    assert isinstance(np.float32(2) * a, nd.NDArray)
    with pytest.raises(ShapeError):
        a + nd.ones((4,))


def test_mod_follows_python_sign_convention():
    af = nd.array([-3, -1, 1, 3])
    assert (af % 2).asnumpy().tolist() == [1, 1, 1, 1]
    assert (af % -2).asnumpy().tolist() == [-1, -1, -1, -1]
    assert (5 % af).asnumpy().tolist() == [-1, 0, 0, 2]


def test_integer_rules_match_mxnet(behaviour):
    ai = nd.array([-3, -1, 1, 3], dtype="int32")
    assert (ai / 2).asnumpy().tolist() == behaviour["int_div_2"]
    assert (ai % 2).asnumpy().tolist() == behaviour["int_mod_2"]
    assert (ai * 1.5).asnumpy().tolist() == behaviour["int_mul_1_5"]
    assert (ai * 1.5).dtype is np.int32
    assert (nd.ones(2, dtype="float16") * 2.5).dtype is np.float16


def test_mixed_dtypes_and_contexts_are_errors():
    with pytest.raises(DTypeError, match="float64"):
        nd.ones(2, dtype="float64") + nd.ones(2)
    with pytest.raises(MXNetError, match="cpu"):
        nd.ones(2) + nd.ones(2, ctx=cpu(1))
    with pytest.raises(TypeError):
        nd.ones(2) + "x"
    with pytest.raises(TypeError):
        nd.ones(2).__eq__(None)  # MXNet raises TypeError for None too


def test_comparisons_return_input_dtype():
    af = nd.array([-3, -1, 1, 3])
    assert (af > 0).asnumpy().tolist() == [0, 0, 1, 1]
    assert (0 < af).asnumpy().tolist() == [0, 0, 1, 1]
    assert (af == 1).asnumpy().tolist() == [0, 0, 1, 0]
    assert (af != 1).asnumpy().tolist() == [1, 1, 0, 1]
    assert (af >= 1).asnumpy().tolist() == [0, 0, 1, 1]
    assert (af <= -1).asnumpy().tolist() == [1, 1, 0, 0]
    assert (af == af.copy()).dtype is np.float32
    ai = nd.array([1, 2], dtype="int32")
    assert (ai == ai.copy()).dtype is np.int32
    assert hash(af) != hash(nd.array([-3, -1, 1, 3]))


def test_inplace_ops_write_into_the_same_buffer():
    buf = np.ones((2, 2), dtype=np.float32)
    a = nd.NDArray(buf, cpu(0))
    a += 1
    a *= nd.array([1, 2])
    a -= 0.5
    a /= 2
    assert a._data is buf
    assert buf.tolist() == [[0.75, 1.75], [0.75, 1.75]]
    with pytest.raises(ShapeError):
        small = nd.ones((2,))
        small += nd.ones((2, 2))


# ----------------------------------------------------------------------------- pickling

def test_pickle_round_trip_and_state_format():
    a = nd.array([1, 2])
    fn, args, state = a.__reduce__()
    assert fn is nd.NDArray and args == (None,)
    assert isinstance(state["handle"], bytearray)
    with open(os.path.join(GOLDEN, "pickled.bin"), "rb") as handle:
        mx_record = handle.read()
    assert bytes(nd.array([[1, 2], [3, 4]], dtype="int32").__getstate__()["handle"]) == mx_record
    for value in (nd.array([[1.5, 2.5]]), nd.array([1, 2], dtype="int64"),
                  nd.ones((2, 3), dtype="bool")):
        back = pickle.loads(pickle.dumps(value))
        assert back.dtype is value.dtype and back.shape == value.shape
        assert np.array_equal(back.asnumpy(), value.asnumpy())
    restored = nd.NDArray(None)
    restored.__setstate__({"handle": bytearray(mx_record)})
    assert restored.dtype is np.int32 and restored.asnumpy().tolist() == [[1, 2], [3, 4]]
    with pytest.raises(MXNetError, match="pickled NDArray"):
        nd.NDArray(None).__setstate__({"handle": bytearray(mx_record[:-3])})


# ----------------------------------------------------------------------------- routines

def test_reductions_match_mxnet_shapes(behaviour):
    a = a23()
    assert list(nd.sum(a).shape) == behaviour["sum_shape"]
    assert nd.sum(a).asscalar() == 15
    assert nd.sum(a, axis=1).asnumpy().tolist() == [3, 12]
    assert nd.sum(a, axis=1, keepdims=True).shape == (2, 1)
    assert nd.sum(a, keepdims=True).shape == (1, 1)
    assert nd.sum(a, axis=0, exclude=True).asnumpy().tolist() == [3, 12]
    assert nd.mean(a, axis=(0, 1)).shape == (1,)
    assert nd.max(a, axis=0).asnumpy().tolist() == [3, 4, 5]
    assert nd.min(a).asscalar() == 0
    assert nd.prod(a + 1).asscalar() == 720
    assert nd.mean(nd.array([1, 2], dtype="int32")).asnumpy().tolist() == [1]
    assert nd.norm(a).shape == (1,)
    assert np.isclose(nd.norm(a).asscalar(), np.sqrt(55))
    assert nd.norm(a, ord=1).asscalar() == 15
    assert nd.norm(a, axis=1, keepdims=True).shape == (2, 1)
    assert a.sum(axis=0).asnumpy().tolist() == [3, 5, 7]


def test_arg_reductions_and_indexing_routines(behaviour):
    a = a23()
    assert nd.argmax(a, axis=1).asnumpy().tolist() == behaviour["argmax_axis1"]
    assert nd.argmax(a, axis=1).dtype is np.float32
    assert nd.argmax(a).shape == (1,)
    assert nd.argmin(a, axis=1).asnumpy().tolist() == [0, 0]
    assert nd.argmax(a, axis=1, keepdims=True).shape == (2, 1)
    assert nd.pick(a, nd.array([5, -1]), axis=1).asnumpy().tolist() == behaviour["pick_clip"]
    assert nd.pick(a, nd.array([5, -1]), axis=1, mode="wrap").asnumpy().tolist() == [2, 5]
    assert nd.pick(a, nd.array([0, 1]), axis=1, keepdims=True).shape == (2, 1)
    taken = nd.take(nd.arange(10), nd.array([1, 12, -1]), mode="wrap")
    assert taken.asnumpy().tolist() == behaviour["take_wrap"]
    assert nd.take(nd.arange(10), nd.array([1, 12, -1])).asnumpy().tolist() == [1, 9, 0]
    assert nd.take(a, nd.array([1, 0])).shape == (2, 3)
    hot = nd.one_hot(nd.array([1, 0, 5]), 3)
    assert hot.asnumpy().tolist() == [[0, 1, 0], [1, 0, 0], [0, 0, 0]]
    hot = nd.one_hot(nd.array([1]), 3, on_value=5, off_value=-1, dtype="int32")
    assert hot.dtype is np.int32 and hot.asnumpy().tolist() == [[-1, 5, -1]]
    picked = nd.where(nd.array([1, 0]), nd.array([1, 2]), nd.array([3, 4]))
    assert picked.asnumpy().tolist() == [1, 4]
    rows = nd.where(nd.array([1, 0]), nd.arange(4).reshape((2, 2)), nd.zeros((2, 2)))
    assert rows.asnumpy().tolist() == [[0, 1], [0, 0]]


def test_joining_and_slicing():
    a = a23()
    assert nd.concat(nd.ones((2, 1)), nd.zeros((2, 2))).shape == (2, 3)
    assert nd.concat(nd.ones((2,)), nd.ones((3,)), dim=0).shape == (5,)
    assert nd.concatenate([nd.ones((2, 1)), nd.zeros((3, 1))]).shape == (5, 1)
    one = nd.ones((2,))
    assert nd.concatenate([one], always_copy=False) is one
    assert nd.concatenate([one]) is not one
    with pytest.raises(ShapeError):
        nd.concat(nd.ones((2, 1)), nd.ones((3, 1)))
    assert nd.slice_axis(a, axis=1, begin=0, end=2).shape == (2, 2)
    assert nd.slice_axis(a, axis=1, begin=1, end=None).shape == (2, 2)
    assert nd.slice_axis(a, axis=1, begin=-2, end=-1).asnumpy().tolist() == [[1], [4]]
    sliced = nd.slice_axis(a, axis=0, begin=0, end=1)
    sliced[:] = 100
    assert a.asnumpy()[0, 0] == 0  # routines return new arrays
    assert nd.stack(a, a, axis=1).shape == (2, 2, 3)
    parts = nd.split(a, num_outputs=3, axis=1)
    assert [p.shape for p in parts] == [(2, 1)] * 3
    parts = nd.split(nd.arange(6).reshape((3, 2)), num_outputs=3, axis=0, squeeze_axis=True)
    assert [p.asnumpy().tolist() for p in parts] == [[0, 1], [2, 3], [4, 5]]
    assert nd.split(nd.ones((2, 4)), num_outputs=1, axis=1).shape == (2, 4)
    with pytest.raises(ShapeError):
        nd.split(a, num_outputs=2, axis=1)


def test_products():
    a = a23()
    assert nd.dot(a, a.T).asnumpy().tolist() == [[5, 14], [14, 50]]
    assert nd.dot(a, a, transpose_b=True).shape == (2, 2)
    assert nd.dot(nd.ones((3, 2)), nd.ones((3, 4)), transpose_a=True).shape == (2, 4)
    assert nd.dot(nd.ones(3), nd.ones(3)).shape == (1,)
    assert nd.dot(nd.ones((2, 3, 4)), nd.ones((4, 5))).shape == (2, 3, 5)
    with pytest.raises(ShapeError):
        nd.dot(a, a)
    assert nd.batch_dot(nd.ones((2, 3, 4)), nd.ones((2, 4, 5))).shape == (2, 3, 5)
    assert nd.batch_dot(nd.ones((2, 4, 3)), nd.ones((2, 5, 4)), transpose_a=True,
                        transpose_b=True).shape == (2, 3, 5)


def test_elementwise_routines():
    x = nd.array([-1.0, 0.0, 4.0])
    assert nd.relu(x).asnumpy().tolist() == [0, 0, 4]
    assert nd.sign(x).asnumpy().tolist() == [-1, 0, 1]
    assert nd.square(x).asnumpy().tolist() == [1, 0, 16]
    assert nd.sqrt(nd.array([4, 9])).asnumpy().tolist() == [2, 3]
    assert nd.sqrt(nd.array([4, 5], dtype="int32")).asnumpy().tolist() == [2, 2]
    assert np.allclose(nd.exp(nd.log(nd.array([2.0]))).asnumpy(), 2)
    assert nd.sigmoid(nd.array([0])).asnumpy().tolist() == [0.5]
    assert np.allclose(nd.tanh(x).asnumpy(), np.tanh([-1, 0, 4]))
    assert nd.clip(x, -0.5, 1).asnumpy().tolist() == [-0.5, 0, 1]
    assert nd.clip(nd.array([1, 5], dtype="int32"), 2, 3).asnumpy().tolist() == [2, 3]
    assert nd.maximum(0.5, nd.array([0, 1])).asnumpy().tolist() == [0.5, 1]
    assert nd.maximum(nd.array([0, 1]), 0.5).asnumpy().tolist() == [0.5, 1]
    assert nd.minimum(nd.array([0, 3]), nd.array([1, 2])).asnumpy().tolist() == [0, 2]
    assert nd.maximum(1, 2) == 2
    out = nd.zeros((3,))
    assert nd.relu(x, out=out) is out and out.asnumpy().tolist() == [0, 0, 4]


def test_softmax_family():
    s = nd.softmax(nd.array([[1, 2], [3, 4]]))
    assert np.allclose(s.asnumpy(), [[0.26894143, 0.73105854]] * 2)
    ls = nd.log_softmax(nd.array([1, 2]), axis=-1)
    assert np.allclose(ls.asnumpy(), [-1.3132598, -0.3132598])
    t = nd.softmax(nd.array([1, 2, 3]), temperature=2)
    assert np.allclose(t.asnumpy(), [0.18632373, 0.3071959, 0.5064804])


def test_shape_routines():
    x = nd.ones((2, 3, 4))
    assert nd.transpose(x).shape == (4, 3, 2)
    assert nd.transpose(x, axes=(1, 0, 2)).shape == (3, 2, 4)
    assert nd.expand_dims(nd.ones((2, 3)), axis=1).shape == (2, 1, 3)
    assert nd.flatten(x).shape == (2, 12)
    assert nd.flatten(nd.ones((2,))).shape == (2, 1)
    assert nd.reshape(x, shape=(0, -1)).shape == (2, 12)
    assert nd.broadcast_to(nd.ones((1, 3)), shape=(2, 3)).shape == (2, 3)
    assert nd.broadcast_to(nd.ones((2, 1)), shape=(0, 3)).shape == (2, 3)
    assert nd.zeros_like(nd.ones(2, dtype="int32")).dtype is np.int32
    assert nd.ones_like(x).asnumpy().sum() == 24


def test_random_is_seeded_and_shaped():
    mxrandom.seed(7)
    first = nd.random.uniform(shape=(2, 2))
    mxrandom.seed(7)
    again = nd.random.uniform(shape=(2, 2))
    assert first.dtype is np.float32 and np.array_equal(first.asnumpy(), again.asnumpy())
    assert ((first.asnumpy() >= 0) & (first.asnumpy() < 1)).all()
    assert nd.random.uniform().shape == (1,)
    assert nd.random.uniform(-1, 1, shape=3).shape == (3,)
    assert nd.random.normal(shape=(2,), dtype="float64").dtype is np.float64
    out = nd.zeros((3,))
    assert nd.random.normal(0, 1, shape=(3,), out=out) is out
    assert out.asnumpy().std() > 0
    ints = nd.random.randint(0, 5, shape=(50,))
    assert ints.dtype is np.int32 and 0 <= ints.asnumpy().min() and ints.asnumpy().max() < 5
    per_elem = nd.random.uniform(nd.array([0, 10]), nd.array([1, 11]), shape=(3,))
    assert per_elem.shape == (2, 3) and (per_elem.asnumpy()[1] >= 10).all()
    shuffled = nd.random.shuffle(nd.arange(6).reshape((3, 2)))
    assert sorted(map(tuple, shuffled.asnumpy().tolist())) == [(0, 1), (2, 3), (4, 5)]
    assert mxrandom.uniform is nd.random.uniform and mxrandom.normal is nd.random.normal


@pytest.mark.skipif(backend.gpu_count() == 0, reason="needs a GPU and CuPy")
def test_gpu_arrays_match_cpu(tmp_path):
    from minimod.context import gpu
    host = a23()
    dev = host.as_in_context(gpu(0))
    assert dev.context == gpu(0) and repr(dev).endswith("@gpu(0)>")
    assert np.array_equal((dev * 2 + 1).asnumpy(), (host * 2 + 1).asnumpy())
    assert np.array_equal(nd.dot(dev, dev.T).asnumpy(), nd.dot(host, host.T).asnumpy())
    assert nd.sum(dev).asscalar() == 15
    dev[0] = 9
    assert dev.asnumpy()[0].tolist() == [9, 9, 9]
    assert dev.copyto(nd.zeros((2, 3))).asnumpy().tolist() == dev.asnumpy().tolist()
    path = str(tmp_path / "gpu.nd")
    nd.save(path, {"w": dev})
    assert nd.load(path)["w"].asnumpy().tolist() == dev.asnumpy().tolist()
    mxrandom.seed(3)
    first = nd.random.uniform(shape=(3,), ctx=gpu(0)).asnumpy()
    mxrandom.seed(3)
    assert np.array_equal(first, nd.random.uniform(shape=(3,), ctx=gpu(0)).asnumpy())
