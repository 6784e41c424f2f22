"""Sparse NDArrays (minimod.ndarray.sparse): the formats, creation, conversions, writes, and
the arithmetic and products with MXNet 1.9.1's numbers and result storage types
(tests/data/sparse/sparse_golden.npz, written by gen_sparse_golden.py under MXNet)."""
import json
import os
import pickle

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError, ShapeError

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "sparse",
                              "sparse_golden.npz"))
META = json.loads(str(GOLDEN["meta"]))
sp = mx.nd.sparse


def rsp(name):
    return mx.nd.array(GOLDEN[name]).tostype("row_sparse")


def test_row_sparse_components_and_round_trip():
    x = np.zeros((4, 2, 3), np.float32)
    x[[1, 3]] = np.arange(12).reshape(2, 2, 3) + 1
    a = mx.nd.array(x).tostype("row_sparse")
    assert isinstance(a, sp.RowSparseNDArray) and a.stype == "row_sparse"
    assert a.shape == (4, 2, 3) and a.dtype is np.float32 and a.size == 24 and len(a) == 4
    assert a.indices.asnumpy().tolist() == [1, 3] and a.indices.dtype is np.int64
    np.testing.assert_array_equal(a.data.asnumpy(), x[[1, 3]])
    np.testing.assert_array_equal(a.asnumpy(), x)
    back = a.tostype("default")
    assert back.stype == "default" and type(back) is mx.nd.NDArray
    np.testing.assert_array_equal(back.asnumpy(), x)
    a.data[:] = 0  # a copy, as MXNet's
    np.testing.assert_array_equal(a.asnumpy(), x)


def test_csr_components_and_creation_forms():
    c = GOLDEN["C"]
    a = mx.nd.array(c).tostype("csr")
    rows, cols = np.nonzero(c)
    assert a.indices.asnumpy().tolist() == cols.tolist()
    assert a.indptr.asnumpy().tolist() == [0] + np.cumsum((c != 0).sum(1)).tolist()
    np.testing.assert_array_equal(a.data.asnumpy(), c[rows, cols])
    triple = sp.csr_matrix((a.data, a.indices, a.indptr), shape=c.shape)
    np.testing.assert_array_equal(triple.asnumpy(), c)
    coo = sp.csr_matrix((c[rows, cols], (rows, cols)), shape=c.shape)
    np.testing.assert_array_equal(coo.asnumpy(), c)
    assert sp.csr_matrix(c).dtype is np.float32 and sp.csr_matrix(c.astype(np.float64)).dtype \
        is np.float64
    assert sp.csr_matrix((3, 4)).asnumpy().sum() == 0
    assert mx.nd.zeros((3, 4), stype="csr").stype == "csr"
    r = sp.row_sparse_array((np.ones((2, 3), np.float32), [0, 2]), shape=(4, 3))
    assert r.asnumpy()[[0, 2]].all() and not r.asnumpy()[[1, 3]].any()
    assert sp.row_sparse_array((np.ones((1, 3), np.float32), [5])).shape == (6, 3)
    assert mx.nd.array(a).stype == "csr"  # sparse in, sparse out, as MXNet's mx.nd.array


def test_malformed_components_are_refused_naming_the_fault():
    with pytest.raises(MXNetError, match="indptr has 2 entries for 2 rows"):
        sp.csr_matrix(([1.0], [0], [0, 1]), shape=(2, 2))
    with pytest.raises(MXNetError, match=r"outside \[0, 2\)"):
        sp.csr_matrix(([1.0], [5], [0, 1, 1]), shape=(2, 2))
    with pytest.raises(MXNetError, match="2 index"):
        sp.row_sparse_array((np.ones((1, 3)), [0, 1]), shape=(4, 3))
    unsorted = sp.row_sparse_array((np.ones((2, 3)), [2, 0]), shape=(4, 3))
    with pytest.raises(MXNetError, match="not sorted"):
        unsorted.check_format()
    with pytest.raises(MXNetError, match="2-D"):
        mx.nd.ones((2, 2, 2)).tostype("csr")


@pytest.mark.parametrize("name", sorted(k[3:] for k in META if k.startswith("op_")))
def test_arithmetic_and_products_give_mxnets_values_and_storage(name):
    a, b, c = rsp("A"), rsp("B"), mx.nd.array(GOLDEN["C"]).tostype("csr")
    d, e = mx.nd.array(GOLDEN["D"]), mx.nd.array(GOLDEN["E"])
    cases = {
        "rsp_add": lambda: a + b, "rsp_sub": lambda: a - b, "rsp_mul": lambda: a * b,
        "rsp_scale": lambda: a * 2.5, "rsp_div": lambda: a / 4.0, "rsp_neg": lambda: -a,
        "rsp_plus_dense": lambda: a + mx.nd.array(GOLDEN["B"]),
        "rsp_times_dense": lambda: a * mx.nd.array(GOLDEN["B"]),
        "csr_add": lambda: c + c, "csr_scale": lambda: c * 3.0,
        "csr_dot_dense": lambda: sp.dot(c, d), "csrT_dot_dense": lambda: mx.nd.dot(
            c, e, transpose_a=True), "csr_dot_rsp": lambda: sp.dot(c, d.tostype("row_sparse")),
        "retain": lambda: sp.retain(b, mx.nd.array([0, 3, 4], dtype="int64")),
        "sqrt_rsp": lambda: mx.nd.sqrt(a), "rsp_plus_scalar": lambda: a + 1.0,
    }
    got = cases[name]()
    np.testing.assert_allclose(got.asnumpy(), GOLDEN["op_" + name], rtol=1e-6)
    want = META["op_" + name]
    assert got.stype == want
    if want == "row_sparse":
        assert got.indices.asnumpy().tolist() == GOLDEN["rows_" + name].tolist()


def test_writes_keep_the_storage_type():
    a = rsp("A")
    a += rsp("B")
    assert a.stype == "row_sparse"
    np.testing.assert_allclose(a.asnumpy(), GOLDEN["A"] + GOLDEN["B"], rtol=1e-6)
    a[:] = mx.nd.ones((5, 3))
    assert a.stype == "row_sparse" and a.indices.asnumpy().tolist() == [0, 1, 2, 3, 4]
    a[:] = 0
    assert a.indices.asnumpy().size == 0
    dense = mx.nd.zeros((5, 3))
    rsp("B").copyto(dense)
    np.testing.assert_array_equal(dense.asnumpy(), GOLDEN["B"])
    target = mx.nd.zeros((5, 3), stype="row_sparse")
    mx.nd.array(GOLDEN["A"]).copyto(target)
    assert target.stype == "row_sparse" and target.indices.asnumpy().tolist() == [0, 3]
    with pytest.raises(MXNetError, match=r"\[:\] only"):
        target[1] = 1.0
    with pytest.raises(ShapeError):
        target[:] = mx.nd.ones((2, 3))


def test_the_dense_view_is_read_only_unless_every_row_is_stored():
    partial = rsp("A")
    with pytest.raises(ValueError, match="read-only"):
        partial._data[0] = 1.0
    full = mx.nd.ones((3, 2)).tostype("row_sparse")
    full._data[0] = 5.0  # every row stored: the values array is the dense array
    assert full.asnumpy()[0].tolist() == [5.0, 5.0]


def test_csr_row_slicing_copies_pickling_and_contexts():
    c = mx.nd.array(GOLDEN["C"]).tostype("csr")
    np.testing.assert_array_equal(c[1:3].asnumpy(), GOLDEN["C"][1:3])
    np.testing.assert_array_equal(c[-1].asnumpy(), GOLDEN["C"][-1:])
    assert c[1:3].stype == "csr"
    moved = c.copyto(mx.cpu(1))
    assert moved.context == mx.cpu(1) and moved.stype == "csr"
    assert c.astype("float64").dtype is np.float64 and c.astype("float64").stype == "csr"
    again = pickle.loads(pickle.dumps(rsp("B")))
    assert again.stype == "row_sparse"
    np.testing.assert_array_equal(again.asnumpy(), GOLDEN["B"])


def test_rand_sparse_ndarray_draws_the_storage_asked_for():
    np.random.seed(0)
    arr, (values, indices) = mx.test_utils.rand_sparse_ndarray((20, 3), "row_sparse",
                                                               density=0.3)
    assert arr.stype == "row_sparse" and arr.indices.asnumpy().tolist() == indices.tolist()
    np.testing.assert_array_equal(arr.data.asnumpy(), values)
    full = mx.test_utils.rand_ndarray((6, 4), "row_sparse", density=1)
    assert full.indices.asnumpy().tolist() == list(range(6))
    csr = mx.test_utils.rand_ndarray((50, 40), "csr", density=0.1)
    assert csr.stype == "csr" and 0.03 < (csr.asnumpy() != 0).mean() < 0.2
    csr.check_format()


def test_csr_take_rows_and_ndarrayiter_batches_csr_data():
    np.random.seed(2)
    csr = mx.test_utils.rand_ndarray((9, 6), "csr", density=0.4)
    dense = csr.asnumpy()
    picked = csr.take_rows([4, 0, 8, 4])
    picked.check_format()
    np.testing.assert_array_equal(picked.asnumpy(), dense[[4, 0, 8, 4]])
    it = mx.io.NDArrayIter({"x": csr, "y": dense}, None, batch_size=4, shuffle=True,
                           last_batch_handle="discard")
    batches = list(it)
    assert len(batches) == 2
    for batch in batches:  # the csr rows and the dense rows are shuffled alike
        x, y = batch.data
        assert x.stype == "csr" and x.shape == (4, 6)
        np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())
    # in order too (MXNet 1.9.1 gives these densely, docs/compatibility.md)
    for i, batch in enumerate(mx.io.NDArrayIter(csr, None, batch_size=4,
                                                last_batch_handle="discard")):
        assert batch.data[0].stype == "csr"
        np.testing.assert_array_equal(batch.data[0].asnumpy(), dense[4 * i:4 * i + 4])
    with pytest.raises(NotImplementedError, match="discard"):
        mx.io.NDArrayIter(csr, dense, batch_size=4)


#: MXNet 1.9.1 keeps the storage type of a row-sparse or CSR input for these (f(0) = 0) and
#: falls back to dense for the others (each checked by hand against MXNet 1.9.1)
KEEPING = ("abs sign sqrt cbrt square round rint ceil floor trunc fix expm1 log1p sin sinh tan "
           "tanh arcsin arcsinh arctan degrees radians relu negative").split()
DENSE = "sigmoid exp cos log rsqrt reciprocal".split()


@pytest.mark.parametrize("name", KEEPING + DENSE)
@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_unary_operators_keep_the_storage_where_mxnet_does(name, stype):
    dense = np.array([[0, 1.5], [0, 0], [0.25, -0.5]], np.float32)
    x = mx.nd.array(dense).tostype(stype)
    for got in (getattr(mx.nd, name)(x), getattr(sp, name)(x)):
        assert got.stype == (stype if name in KEEPING else "default")
        np.testing.assert_allclose(got.asnumpy(), getattr(mx.nd, name)(
            mx.nd.array(dense)).asnumpy(), rtol=1e-6, equal_nan=True)
        if name in KEEPING:  # the same stored entries, the input's untouched
            assert got.indices.asnumpy().tolist() == x.indices.asnumpy().tolist()
    np.testing.assert_array_equal(x.asnumpy(), dense)


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_operators_write_into_a_sparse_out_in_its_storage_type(stype):
    """MXNet's samplers and operators take a sparse `out=`; it keeps its storage type."""
    out = mx.nd.zeros((3, 4)).tostype(stype)
    assert mx.nd.random.gamma(alpha=2, beta=1, shape=(3, 4), out=out) is out
    assert out.stype == stype and (out.asnumpy() > 0).all()
    mx.nd.exp(mx.nd.zeros((3, 4)), out=out)
    assert out.stype == stype
    np.testing.assert_array_equal(out.asnumpy(), np.ones((3, 4)))


#: (expression over a sparse y, whether MXNet 1.9.1 keeps y's storage type), checked by hand
#: against MXNet 1.9.1 for both sparse types: a scalar comparison, + or - keeps it when it
#: maps 0 to 0; the mx.nd functions follow the operators with a number
SCALAR_CASES = [
    ("y == 1", True), ("y == 0", False), ("y != 0", True), ("y != 1", False),
    ("y > 0", True), ("y > -1", False), ("0 > y", True), ("y >= 1", True), ("y >= 0", False),
    ("y < 0", True), ("y < 1", False), ("1 <= y", True), ("y <= 0", False), ("y - 0", True),
    ("y + 0", True), ("y + 1", False), ("1 - y", False), ("y * 2", True),
    ("mx.nd.greater(y, 0)", True), ("mx.nd.equal(y, 1)", True), ("mx.nd.add(y, 0)", True),
    ("mx.nd.lesser(0, y)", True), ("mx.nd.multiply(y, 2)", True), ("y == y", False),
]


@pytest.mark.parametrize("expr, keeps", SCALAR_CASES)
@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_operations_with_a_scalar_keep_the_storage_type_where_mxnet_does(stype, expr, keeps):
    dense = np.array([[0, 1.5, 0], [0, 0, 0], [2, 0, -1]], np.float32)
    y = mx.nd.array(dense).tostype(stype)
    got = eval(expr, {"mx": mx, "y": y})
    assert got.stype == (stype if keeps else "default")
    np.testing.assert_array_equal(got.asnumpy(), eval(expr, {"mx": mx,
                                                             "y": mx.nd.array(dense)}).asnumpy())


#: MXNet 1.9.1's result storage of mx.nd.<fn>(a, b) over two arrays of one shape
#: (R row_sparse, C csr, D dense), checked by hand
PAIR_CASES = {
    "elemwise_add": {"RR": "R", "CC": "C"}, "elemwise_sub": {"RR": "R", "CC": "C"},
    "elemwise_mul": {"RR": "R", "CC": "C", "RD": "R", "DR": "R", "CD": "C", "DC": "C"},
    "elemwise_div": {}, "add": {}, "maximum": {}, "multiply": {"CD": "C"},
}
NAMES = {"R": "row_sparse", "C": "csr", "D": "default"}


@pytest.mark.parametrize("fn", sorted(PAIR_CASES))
@pytest.mark.parametrize("pair", ["RR", "RC", "RD", "CR", "CC", "CD", "DR", "DC"])
def test_functions_of_two_arrays_give_mxnets_storage_type(fn, pair):
    a = np.array([[0, 1.5, 0], [0, 0, 0], [2, 0, -1]], np.float32)
    b = np.array([[1, 0, 0], [0, 0, 3], [2, 0, 0]], np.float32)
    lhs, rhs = (mx.nd.array(x).tostype(NAMES[k]) for x, k in zip((a, b), pair))
    got = getattr(mx.nd, fn)(lhs, rhs)
    assert got.stype == NAMES[PAIR_CASES[fn].get(pair, "D")]
    with np.errstate(all="ignore"):
        want = getattr(mx.nd, fn)(mx.nd.array(a), mx.nd.array(b)).asnumpy()
    np.testing.assert_array_equal(got.asnumpy(), want)


DENSE_4x2 = np.array([[0, 1.5], [0, 0], [2, 0], [0, 0]], np.float32)


@pytest.mark.parametrize("make", [
    lambda: mx.nd.sparse.row_sparse_array((4, 2), shape=(3, 2)),
    lambda: mx.nd.sparse.row_sparse_array(DENSE_4x2, shape=(3, 2)),
    lambda: mx.nd.sparse.row_sparse_array(mx.nd.array(DENSE_4x2).tostype("row_sparse"),
                                          shape=(3, 2)),
    lambda: mx.nd.sparse.csr_matrix((4, 2), shape=(3, 2)),
    lambda: mx.nd.sparse.csr_matrix(mx.nd.array(DENSE_4x2), shape=(4, 3)),
    lambda: mx.nd.sparse.csr_matrix(mx.nd.array(DENSE_4x2).tostype("csr"), shape=(3, 2)),
])
def test_a_shape_beside_a_source_of_another_shape_is_refused_as_in_mxnet(make):
    with pytest.raises(ValueError, match=r"Shape mismatch detected: .*\(4, 2\)"):
        make()


def test_csr_components_that_cannot_tell_the_shape_are_refused():
    empty = (np.array([], np.float32), np.array([], np.int64), np.array([0, 0, 0]))
    with pytest.raises(ValueError, match="number of columns cannot be inferred; give shape"):
        mx.nd.sparse.csr_matrix(empty)
    assert mx.nd.sparse.csr_matrix(empty, shape=(2, 5)).shape == (2, 5)
    with pytest.raises(ValueError, match="column index of the COO input is outside"):
        mx.nd.sparse.csr_matrix((np.array([1.0]), (np.array([1]), np.array([3]))),
                                shape=(2, 2))
    assert mx.nd.sparse.row_sparse_array((4, 2), shape=(4, 2)).shape == (4, 2)


def test_context_default_ctx_is_mxnets_deprecated_class_property():
    with pytest.warns(DeprecationWarning, match="default_ctx is deprecated"):
        assert mx.context.Context.default_ctx == mx.cpu(0)
    try:
        with pytest.warns(DeprecationWarning):
            mx.context.Context.default_ctx = mx.cpu(2)
        assert mx.context.current_context() == mx.cpu(2)
        assert mx.nd.zeros((1,)).context == mx.cpu(2)
    finally:
        with pytest.warns(DeprecationWarning):
            mx.context.Context.default_ctx = mx.cpu(0)


@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_take_of_csr_rows_is_csr_as_in_mxnet(mode):
    dense = np.array([[0, 1.5, 0], [0, 0, 0], [2, 0, -1], [0, 0, 4]], np.float32)
    csr = mx.nd.array(dense).tostype("csr")
    idx = mx.nd.array([2, 0, 5, -1, 2])
    got = mx.nd.take(csr, idx, mode=mode)
    assert got.stype == "csr"
    got.check_format()
    np.testing.assert_array_equal(got.asnumpy(),
                                  mx.nd.take(mx.nd.array(dense), idx, mode=mode).asnumpy())
    assert mx.nd.take(csr, mx.nd.array([1]), axis=1).stype == "default"  # as MXNet


def test_rand_sparse_ndarray_powerlaw_stores_mxnets_row_counts():
    """The stored values per row of MXNet 1.9.1's power-law test matrix (its numbers for
    these shapes): 2, 4, 8 ... until the count rows * cols * density is used up."""
    np.random.seed(3)
    arr, (indptr, _, values) = mx.test_utils.rand_sparse_ndarray((10, 100), "csr", density=0.5,
                                                                 distribution="powerlaw")
    assert arr.stype == "csr"
    assert np.diff(indptr.asnumpy()).tolist() == [2, 4, 8, 16, 32, 64, 100, 100, 100, 74]
    assert ((values.asnumpy() > 1) & (values.asnumpy() < 3.001)).all()
    arr, _ = mx.test_utils.rand_sparse_ndarray((8, 20), "csr", density=0.3,
                                               distribution="powerlaw")
    assert np.diff(arr.indptr.asnumpy()).tolist() == [2, 4, 8, 16, 15, 1, 1, 1]
    with pytest.raises(ValueError, match="rows \\* cols \\* density >= 2 \\* rows"):
        mx.test_utils.rand_sparse_ndarray((10, 10), "csr", density=0.1,
                                          distribution="powerlaw")
    with pytest.raises(mx.MXNetError, match="2-D csr arrays only"):
        mx.test_utils.rand_sparse_ndarray((10, 10), "row_sparse", distribution="powerlaw")


@pytest.mark.parametrize("fn", ["elemwise_add", "elemwise_sub", "elemwise_mul"])
@pytest.mark.parametrize("pair", ["RR", "RC", "RD", "CR", "CC", "CD", "DR", "DC"])
def test_sparse_module_elemwise_functions_are_mxnets_too(fn, pair):
    a = np.array([[0, 1.5, 0], [0, 0, 0], [2, 0, -1]], np.float32)
    lhs, rhs = (mx.nd.array(a).tostype(NAMES[k]) for k in pair)
    got = getattr(mx.nd.sparse, fn)(lhs, rhs)
    assert got.stype == NAMES[PAIR_CASES[fn].get(pair, "D")]
    np.testing.assert_array_equal(got.asnumpy(), getattr(mx.nd, fn)(lhs, rhs).asnumpy())


#: (expression over a sparse y, the storage type MXNet 1.9.1 gives for row_sparse and for
#: csr), checked by hand against MXNet 1.9.1; values as computed densely
MORE_CASES = [
    ("mx.nd.clip(y, -1, 1)", "row_sparse", "csr"),
    ("mx.nd.zeros_like(y)", "row_sparse", "csr"),
    ("mx.nd.ones_like(y)", "default", "default"),
    ("mx.nd.add_n(y, y, y)", "row_sparse", "default"),
    ("mx.nd.add_n(y, Y)", "default", "default"),
    ("mx.nd.broadcast_mul(y, ROW)", "default", "csr"),
    ("mx.nd.broadcast_mul(y, COL)", "default", "csr"),
    ("mx.nd.broadcast_div(y, ROW)", "default", "csr"),
    ("mx.nd.multiply(y, ROW)", "default", "csr"),
    ("y * ROW", "default", "csr"),
    ("mx.nd.broadcast_add(y, ROW)", "default", "default"),
]


@pytest.mark.parametrize("expr, rsp, csr", MORE_CASES)
@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_more_operations_keep_the_storage_type_where_mxnet_does(stype, expr, rsp, csr):
    dense = np.array([[0, 1.5, 0, 2], [0, 0, 0, 0], [2, 0, -1, 0]], np.float32)
    names = {"ROW": mx.nd.array([[2, 4, 0.5, 1]]), "COL": mx.nd.array([[2], [3], [0.5]]),
             "Y": mx.nd.array(dense), "mx": mx}
    got = eval(expr, dict(names, y=mx.nd.array(dense).tostype(stype)))
    assert got.stype == (rsp if stype == "row_sparse" else csr)
    np.testing.assert_array_equal(got.asnumpy(), eval(expr, dict(names, y=names["Y"])).asnumpy())


def test_csr_divided_by_a_broadcast_zero_is_inf_where_stored_only():
    csr = mx.nd.array([[0, 1.5], [2, 0]]).tostype("csr")
    got = mx.nd.broadcast_div(csr, mx.nd.zeros((1, 2)))
    assert got.stype == "csr"  # MXNet's: the stored entries divided, the others still 0
    np.testing.assert_array_equal(got.asnumpy(), [[0, np.inf], [np.inf, 0]])
