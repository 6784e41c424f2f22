"""MXNet 1.9.1 NDArray behaviours: which slices are contiguous, `inplace=` views of the
reshaping methods, zero-copy `from_numpy`, `load_frombuffer`, the creation functions
(`arange` in integer dtypes, `linspace`, `eye`), `moveaxis`, `split_v2`, the logical routines
and the method forms of operators (`x.shape_array()`, `x.softmin()` ...).

Values marked MXNet were observed with MXNet 1.9.1.
"""
import itertools

import numpy as np
import pytest

import minimod as mx
import minimod.ndarray as nd
from minimod.base import MXNetError, ShapeError

_RS = np.random.RandomState(17)


# ----------------------------------------------------------------------------- contiguity

SLICES = [slice(None), slice(2), slice(1, 4), slice(None, None, 2), slice(0, 1),
          slice(None, None, -1), slice(3, None, -2), slice(5, 6), slice(4, 2)]


def test_slice_contiguity_agrees_with_numpy_flags():
    # the rule: every result axis longer than 1 steps through memory by exactly one result
    # row below it; NumPy's own flag is the judge
    shape = (6, 5, 4)
    x = np.zeros(shape)
    is_contiguous = nd.NDArray._basic_indexing_slice_is_contiguous
    for key in itertools.product(SLICES, repeat=3):
        assert is_contiguous(key, shape) == x[key].flags.c_contiguous, key


def test_slice_contiguity_of_short_keys_and_ints():
    is_contiguous = nd.NDArray._basic_indexing_slice_is_contiguous
    assert is_contiguous((slice(1, 3),), (4, 5))  # whole rows
    assert not is_contiguous((slice(None), slice(1, 3)), (4, 5))
    assert is_contiguous((2, slice(1, 3)), (4, 5))  # one row, a run of it
    assert is_contiguous(slice(None, None, 3), (1, 5))  # a step over one element


def test_contiguous_slice_writes_through():
    x = nd.array(np.arange(24).reshape(4, 6))
    part = x[1:3]
    part[:] = -1
    assert (x.asnumpy()[1:3] == -1).all() and (x.asnumpy()[0] == np.arange(6)).all()


# ----------------------------------------------------------------------------- inplace views

@pytest.mark.parametrize("method, kwargs, shape, want", [
    ("flatten", {}, (2, 3, 4), (2, 12)),
    ("flatten", {}, (5,), (5, 1)),
    ("expand_dims", dict(axis=1), (2, 3), (2, 1, 3)),
    ("expand_dims", dict(axis=-1), (2, 3), (2, 3, 1)),
    ("expand_dims", dict(axis=-3), (2, 3), (1, 2, 3)),
    ("squeeze", {}, (1, 3, 1, 2), (3, 2)),
    ("squeeze", dict(axis=(0, 2)), (1, 3, 1, 2), (3, 2)),
    ("squeeze", dict(axis=-2), (1, 3, 1, 2), (1, 3, 2)),
    ("squeeze", {}, (1, 1), (1,)),  # nothing left: (1,), as MXNet
])
def test_reshaping_methods_copy_or_share(method, kwargs, shape, want):
    data = nd.array(_RS.randn(*shape))
    copy = getattr(data, method)(**kwargs)
    view = getattr(data, method)(inplace=True, **kwargs)
    assert copy.shape == view.shape == want
    np.testing.assert_array_equal(view.asnumpy().ravel(), data.asnumpy().ravel())
    data[:] = 7
    assert (view.asnumpy() == 7).all()  # shares the memory
    assert not (copy.asnumpy() == 7).any()  # does not
    view[:] = 3
    assert (data.asnumpy() == 3).all()


def test_reshaping_method_errors():
    with pytest.raises(ShapeError, match="size 1"):
        nd.ones((2, 3)).squeeze(axis=0, inplace=True)
    with pytest.raises(ShapeError, match="out of range"):
        nd.ones((2, 3)).expand_dims(axis=3)


# ----------------------------------------------------------------------------- from_numpy

def test_from_numpy_shares_memory_and_locks_the_numpy_array():
    source = np.arange(6, dtype=np.float32).reshape(3, 2)
    shared = nd.from_numpy(source)
    assert shared.dtype is np.float32 and shared.shape == (3, 2)
    with pytest.raises(ValueError):
        source[0, 0] = 1  # read-only now, as MXNet
    shared[2, 1] = 100
    assert source[2, 1] == 100
    again = nd.from_numpy(source)  # MXNet shares it again, still writable
    again[0, 0] = -5
    assert source[0, 0] == -5 and shared.asnumpy()[0, 0] == -5


def test_from_numpy_keeps_dtype_shape_and_refuses_what_it_cannot_share():
    for source in (np.array(3), np.zeros((1, 0, 2)), np.arange(4, dtype=np.int64)):
        for zero_copy in (True, False):
            got = nd.from_numpy(source.copy(), zero_copy=zero_copy)
            assert got.shape == source.shape and got.dtype is source.dtype.type
            np.testing.assert_array_equal(got.asnumpy(), source)
    with pytest.raises(ValueError, match="C-contiguous"):
        nd.from_numpy(np.ones((2, 3)).T)
    copied = nd.from_numpy(np.ones((2, 3)).T, zero_copy=False)
    assert copied.shape == (3, 2)
    source = np.ones(3)
    nd.from_numpy(source, zero_copy=False)
    assert source.flags.writeable  # a copy leaves the source alone
    with pytest.raises(ValueError, match="int16"):
        nd.from_numpy(np.ones(2, dtype=np.int16))
    with pytest.raises(TypeError):
        nd.from_numpy([1, 2])


def test_from_numpy_of_a_read_only_array_is_read_only():
    frozen = np.frombuffer(b"\x01\x02\x03\x04", dtype=np.uint8)
    shared = nd.from_numpy(frozen)
    assert not shared.writable
    with pytest.raises(MXNetError):
        shared[0] = 9


# ----------------------------------------------------------------------------- load_frombuffer

def test_load_frombuffer_reads_lists_dicts_and_single_arrays(tmp_path):
    arrays = [nd.array(_RS.randn(2, 3)), nd.array([1, 2, 3], dtype="int32")]
    cases = [(arrays, list), ({"a": arrays[0], "b x": arrays[1]}, dict), (arrays[0], list)]
    for data, kind in cases:
        path = tmp_path / "f.params"
        nd.save(str(path), data)
        loaded = nd.load_frombuffer(path.read_bytes())
        assert isinstance(loaded, kind)
        originals = data if kind is list and isinstance(data, list) else \
            [data] if kind is list else data
        if kind is dict:
            assert sorted(loaded) == sorted(originals)
            pairs = [(originals[k], loaded[k]) for k in originals]
        else:
            pairs = list(zip(originals, loaded))
        for want, got in pairs:
            assert got.dtype is want.dtype
            np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
        with pytest.raises(MXNetError):
            nd.load_frombuffer(path.read_bytes()[:-10])
    with pytest.raises(TypeError):
        nd.load_frombuffer(123)


# ----------------------------------------------------------------------------- creation

def test_arange_uses_mxnet_integer_rules():
    # MXNet: start and step truncate before the range is built
    np.testing.assert_array_equal(nd.arange(1.3, 6, 1.3, dtype="int32").asnumpy(),
                                  [1, 2, 3, 4])
    np.testing.assert_array_equal(nd.arange(0.5, 3, 0.7, dtype="int32").asnumpy(),
                                  [0, 0, 0, 0])
    np.testing.assert_array_equal(nd.arange(-2, 2, dtype="uint8").asnumpy(),
                                  [254, 255, 0, 1])  # wraps, as MXNet
    np.testing.assert_array_equal(nd.arange(0, 20, dtype="int64").asnumpy(), np.arange(20))
    assert nd.arange(3).dtype is np.float32
    got = nd.arange(2, 6, step=1.5, repeat=2).asnumpy()
    np.testing.assert_array_equal(got, np.float32([2, 2, 3.5, 3.5, 5, 5]))


def test_linspace():
    np.testing.assert_allclose(nd.linspace(2, 3, 5).asnumpy(), [2, 2.25, 2.5, 2.75, 3])
    np.testing.assert_allclose(nd.linspace(2, 3, 5, endpoint=False).asnumpy(),
                               [2, 2.2, 2.4, 2.6, 2.8], rtol=1e-6)
    np.testing.assert_array_equal(nd.linspace(0.5, 5, 7, dtype="int32").asnumpy(),
                                  [0, 1, 2, 2, 3, 4, 5])  # MXNet: truncated
    assert nd.linspace(1, 2, 0).shape == (0,)
    assert nd.linspace(1, 2, 3, ctx=mx.cpu(0)).context == mx.cpu(0)


@pytest.mark.parametrize("n, m, k", [(3, 0, 0), (2, 4, 1), (4, 2, -1), (3, 3, 5), (1, 5, -7)])
def test_eye(n, m, k):
    got = nd.eye(n, m, k)
    assert got.dtype is np.float32
    np.testing.assert_array_equal(got.asnumpy(), np.eye(n, m or n, k))
    assert nd.eye(n, k=k, dtype="int32").dtype is np.int32


# ----------------------------------------------------------------------------- moveaxis

@pytest.mark.parametrize("source, destination", [
    (0, 2), (2, 0), (-1, 0), (0, -1), ([0, 1], [2, 0]), ([2, 0], [0, 2]), (range(3), range(3)),
    ([0, 2], [-1, 0])])
def test_moveaxis_matches_numpy(source, destination):
    x = _RS.randn(2, 3, 4)
    got = nd.moveaxis(nd.array(x), source, destination)
    np.testing.assert_array_equal(got.asnumpy(),
                                  np.moveaxis(x, list(source) if isinstance(source, range)
                                              else source,
                                              list(destination)
                                              if isinstance(destination, range)
                                              else destination).astype(np.float32))


@pytest.mark.parametrize("source, destination", [(3, 0), (-4, 0), (0, 5), ([0, 0], [0, 1]),
                                                 ([0, 1], [1, 1]), (0, [0, 1]), ([0, 1], [0])])
def test_moveaxis_errors(source, destination):
    with pytest.raises(ValueError):
        nd.moveaxis(nd.zeros((1, 2, 3)), source, destination)


# ----------------------------------------------------------------------------- split_v2

def test_split_v2_sections_and_indices():
    x = _RS.randn(3, 6)
    parts = nd.split_v2(nd.array(x), 3, axis=1)
    assert [p.shape for p in parts] == [(3, 2)] * 3
    parts = nd.array(x).split_v2((1, 4), axis=1)
    for got, want in zip(parts, np.split(x, [1, 4], axis=1)):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    parts = nd.split_v2(nd.array(x), 3, axis=0, squeeze_axis=True)
    assert [p.shape for p in parts] == [(6,)] * 3
    whole = nd.split_v2(nd.array(x), 1, axis=1)
    assert isinstance(whole, nd.NDArray) and whole.shape == (3, 6)
    with pytest.raises(ValueError):
        nd.split_v2(nd.array(x), [1, 2])


# ----------------------------------------------------------------------------- routines, methods

def test_logical_routines():
    a = nd.array([[1, 0, 3]])
    b = nd.array([[1], [0]])
    np.testing.assert_array_equal(nd.logical_and(a, b).asnumpy(), [[1, 0, 1], [0, 0, 0]])
    np.testing.assert_array_equal(nd.logical_or(a, 0).asnumpy(), [[1, 0, 1]])
    np.testing.assert_array_equal(nd.logical_xor(1, a).asnumpy(), [[0, 1, 0]])
    assert nd.logical_and(2, 0) == 0 and nd.equal(2, 2) == 1  # two scalars: MXNet's 1/0
    assert nd.logical_and(a.astype("int32"), 1).dtype is np.int32
    np.testing.assert_array_equal(nd.true_divide(nd.array([3.0]), 2).asnumpy(), [1.5])


@pytest.mark.parametrize("name, args", [
    ("shape_array", {}), ("size_array", {}), ("softmin", {}), ("rcbrt", {}),
    ("slice_like", dict(shape_like=nd.zeros((2, 2)), axes=(0, 1))),
    ("reshape_like", dict(rhs=nd.zeros((4, 3)))),
    ("broadcast_like", dict(other=None)), ("diag", {}), ("depth_to_space", None),
])
def test_operator_methods_equal_the_functions(name, args):
    data = nd.array(_RS.uniform(0.5, 2, (3, 4)))
    if name == "broadcast_like":
        data, args = nd.array(_RS.randn(1, 4)), dict(rhs=nd.zeros((3, 4)))
        np.testing.assert_array_equal(data.broadcast_like(nd.zeros((3, 4))).asnumpy(),
                                      nd.broadcast_like(data, **args).asnumpy())
        return
    if name == "depth_to_space":
        data, args = nd.array(_RS.randn(1, 4, 2, 3)), dict(block_size=2)
    np.testing.assert_array_equal(getattr(data, name)(**args).asnumpy(),
                                  getattr(nd, name)(data, **args).asnumpy())


def test_shape_and_size_arrays():
    x = nd.zeros((2, 5, 3))
    np.testing.assert_array_equal(x.shape_array().asnumpy(), [2, 5, 3])
    np.testing.assert_array_equal(x.size_array().asnumpy(), [30])
    assert x.shape_array().dtype is np.int64


def test_rounding_methods_keep_integers():
    big = 50000001
    x = nd.array([big, -3], dtype="int32")
    for name in ("round", "floor", "ceil", "trunc", "fix", "rint"):
        got = getattr(x, name)()
        assert got.dtype is np.int32
        np.testing.assert_array_equal(got.asnumpy(), [big, -3])


def test_slice_assign_methods_write_in_place():
    x = nd.zeros((3, 4))
    assert x.slice_assign(nd.ones((2, 2)), (0, 1), (2, 3), (None, None)) is x
    x.slice_assign_scalar(5, (2, 0), (3, 4), (None, 2))
    np.testing.assert_array_equal(x.asnumpy(), [[0, 1, 1, 0], [0, 1, 1, 0], [5, 0, 5, 0]])
