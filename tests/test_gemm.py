"""minimod/gemm.py without a GPU: the row-major to column-major mapping of every operand form
against NumPy (through the stand-in's column-major cuBLAS model), batched products, and the
ctypes calls CublasLib makes, against a recording library."""
import ctypes
import types

import numpy as np
import pytest

from minimod import cuda_graph, gemm

from .fake_cuda_graphs import Blas


class _HostBlas:
    """The stand-in's column-major GEMM over plain NumPy arrays."""

    def __init__(self):
        self.betas = []

    def gemm(self, xp, dtype, plan, a, b, c, beta=0):
        self.betas.append(beta)
        Blas._gemm(plan, a, b, c, beta)


_HOST = types.SimpleNamespace(empty=np.empty, ascontiguousarray=np.ascontiguousarray,
                              matmul=np.matmul)


def _operand(rng, shape, form, dtype):
    """A (rows, cols) operand stored as `form`: C order, a transposed F-order array, a
    row slice of a wider array (ld > cols), a strided (non-BLAS) view."""
    rows, cols = shape
    if form == "c":
        return rng.standard_normal(shape).astype(dtype)
    if form == "t":
        return rng.standard_normal((cols, rows)).astype(dtype).T
    if form == "wide":
        return rng.standard_normal((rows, cols + 3)).astype(dtype)[:, 1:cols + 1]
    return rng.standard_normal((rows * 2, cols * 2)).astype(dtype)[::2, ::2]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(5, 7, 3), (1, 4, 6), (6, 4, 1), (1, 1, 1), (8, 1, 2),
                                   (3, 0, 2)])
def test_gemm_layouts_equal_numpy(dtype, m, k, n):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    forms = ["c", "t", "wide", "strided"]
    for fa in forms:
        for fb in forms:
            a, b = _operand(rng, (m, k), fa, dtype), _operand(rng, (k, n), fb, dtype)
            want = a.astype(np.float64) @ b.astype(np.float64)
            for out_form in ("none", "c", "t"):
                out = None if out_form == "none" else (
                    np.full((m, n), np.nan, dtype) if out_form == "c"
                    else np.full((n, m), np.nan, dtype).T)
                got = gemm.matmul_through(_HostBlas(), _HOST, a, b, out)
                if out is not None:
                    assert got is out
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5,
                                           err_msg="%s %s %s" % (fa, fb, out_form))


@pytest.mark.parametrize("out_form", ["c", "t", "strided"])
def test_an_accumulating_product_adds_to_what_out_holds(out_form):
    """beta = 1 in the GEMM itself where `out` is a matrix cuBLAS writes (rows contiguous);
    a temporary and an addition otherwise (a transposed or strided `out`, batched or vector
    operands, cupy.matmul)."""
    rng = np.random.default_rng(1)
    a, b = _operand(rng, (5, 7), "t", np.float64), _operand(rng, (7, 3), "c", np.float64)
    start = rng.standard_normal((5, 3))
    out = {"c": start.copy(), "t": start.T.copy().T,
           "strided": np.repeat(start, 2, axis=1)[:, ::2]}[out_form]
    blas = _HostBlas()
    assert gemm.matmul_through(blas, _HOST, a, b, out, accumulate=True) is out
    np.testing.assert_allclose(out, start + a @ b, rtol=1e-12)
    assert blas.betas == [1 if out_form == "c" else 0]
    # a batched product through cupy.matmul, and a matrix times a vector
    for fallback, x, y, acc in ((None, rng.standard_normal((2, 5, 7)),
                                 rng.standard_normal((2, 7, 3)), rng.standard_normal((2, 5, 3))),
                                (blas, a, rng.standard_normal(7), rng.standard_normal(5))):
        want = acc + x @ y
        gemm.matmul_through(fallback, _HOST, x, y, acc, accumulate=True)
        np.testing.assert_allclose(acc, want, rtol=1e-12)
    with pytest.raises(ValueError, match="needs the array it adds to"):
        gemm.matmul_through(blas, _HOST, a, b, accumulate=True)


def test_gemm_vectors_and_fallbacks():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3)).astype(np.float32)
    v = rng.standard_normal(3).astype(np.float32)
    np.testing.assert_allclose(gemm.matmul_through(_HostBlas(), _HOST, a, v), a @ v, rtol=1e-6)
    out = np.empty(4, np.float32)
    assert gemm.matmul_through(_HostBlas(), _HOST, a, v, out) is out
    np.testing.assert_allclose(out, a @ v, rtol=1e-6)
    w = rng.standard_normal(4).astype(np.float32)
    np.testing.assert_allclose(gemm.matmul_through(_HostBlas(), _HOST, w, a), w @ a, rtol=1e-6)

    class Refuses:
        def gemm(self, *args):
            raise AssertionError("half and vector-by-batch products are not cuBLAS-direct")
        gemm_batched = gemm
    batched = rng.standard_normal((2, 4, 3)).astype(np.float32)
    np.testing.assert_allclose(gemm.matmul_through(Refuses(), _HOST, v, batched.transpose(
        0, 2, 1)), v @ batched.transpose(0, 2, 1), rtol=1e-6)
    half = a.astype(np.float16)
    assert gemm.matmul_through(Refuses(), _HOST, half, half.T).dtype == np.float16
    assert gemm.matmul_through(Refuses(), _HOST, batched.astype(np.float16),
                               half.T).dtype == np.float16
    with pytest.raises(ValueError):  # an `out` of another shape: never handed to cuBLAS
        gemm.matmul_through(Refuses(), _HOST, a, a.T, np.empty((2, 8), np.float32))


def test_operand_layout_rules():
    f = np.float32().itemsize
    assert gemm.operand_layout((3, 4), (16, 4), f) == (gemm.OP_N, 4)
    assert gemm.operand_layout((3, 4), (4, 12), f) == (gemm.OP_T, 3)
    assert gemm.operand_layout((3, 4), (28, 4), f) == (gemm.OP_N, 7)  # a row slice
    assert gemm.operand_layout((3, 4), (32, 8), f) is None  # every other column
    assert gemm.operand_layout((1, 4), (0, 4), f) == (gemm.OP_N, 4)  # one row: any stride
    assert gemm.operand_layout((3, 4), (-16, 4), f) is None


def test_fake_blas_refuses_reads_outside_the_array():
    a = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match="outside"):
        Blas._gemm((0, 0, 4, 3, 4, 8, 4, 4), a, a, np.zeros((3, 4), np.float32))


class _RecordingLib:
    """Stands for libcublas under ctypes: each function records its arguments."""

    def __init__(self):
        self.calls = []
        for name in ("cublasCreate_v2", "cublasSetStream_v2", "cublasSetWorkspace_v2",
                     "cublasSetMathMode", "cublasSgemm_v2", "cublasDgemm_v2",
                     "cublasSgemmStridedBatched", "cublasDgemmStridedBatched"):
            setattr(self, name, self._fn(name))

    def _fn(self, name):
        return _Fn(name, self.calls)


class _Fn:
    """One recording function, with the argtypes/restype attributes ctypes' functions have."""

    def __init__(self, name, calls):
        self.name, self.calls, self.argtypes, self.restype = name, calls, None, None

    def __call__(self, *args):
        self.calls.append((self.name, args))
        return 0


def test_cublas_calls_carry_the_plan_the_handle_and_the_stream():
    """CublasLib's ctypes plumbing, which only a GPU runs for real: one handle per device made
    outside capture (default math, a fixed workspace), the stream set before every GEMM, and
    the plan's numbers in cuBLAS's argument order with host-pointer scalars 1 and 0."""
    lib = _RecordingLib()
    blas = gemm.CublasLib(lib, "libcublas.so.test")
    assert lib.cublasSgemm_v2.argtypes is not None and lib.cublasSgemm_v2.restype is ctypes.c_int

    def array(ptr, dev=0):
        return types.SimpleNamespace(data=types.SimpleNamespace(ptr=ptr),
                                     device=types.SimpleNamespace(id=dev))
    stream = types.SimpleNamespace(ptr=4242)
    xp = types.SimpleNamespace(
        empty=lambda n, dtype: array(9000), cuda=types.SimpleNamespace(
            get_current_stream=lambda: stream))
    plan = (gemm.OP_T, gemm.OP_N, 5, 3, 7, 7, 7, 5)
    blas.gemm(xp, np.float32, plan, array(100), array(200), array(300))
    stream.ptr = 77
    blas.gemm(xp, np.float64, plan, array(100), array(200), array(300))
    names = [name for name, _ in lib.calls]
    assert names == ["cublasCreate_v2", "cublasSetMathMode", "cublasSetWorkspace_v2",
                     "cublasSetStream_v2", "cublasSgemm_v2",
                     "cublasSetStream_v2", "cublasDgemm_v2"]
    handle = lib.calls[0][1][0]._obj  # byref(handle): cublasCreate fills it
    assert lib.calls[1][1] == (handle, 0)  # CUBLAS_DEFAULT_MATH: no TF32
    assert lib.calls[2][1][1:] == (9000, 32 << 20)
    assert lib.calls[3][1][1] == 4242 and lib.calls[5][1][1] == 77
    args = lib.calls[4][1]
    assert args[1:6] == plan[:5] and (args[7], args[8], args[9], args[10]) == (100, 7, 200, 7)
    assert (args[12], args[13]) == (300, 5)
    assert args[6]._obj.value == 1.0 and args[11]._obj.value == 0.0
    assert type(lib.calls[6][1][6]._obj) is ctypes.c_double
    cuda_graph._CAPTURING[0] = True
    try:  # a device without a handle yet: making one is not for inside a capture
        with pytest.raises(cuda_graph.CaptureError, match="handle"):
            blas.gemm(xp, np.float32, plan, array(1, dev=1), array(2, dev=1), array(3, dev=1))
    finally:
        cuda_graph._CAPTURING[0] = False


class _BatchedHostBlas(_HostBlas):
    """The stand-in's strided batched GEMM over plain NumPy arrays."""

    def gemm_batched(self, xp, dtype, plan, strides, count, a, b, c):
        for x, stride in zip((a, b, c), strides):
            assert count == 1 or x.strides[0] == stride * x.itemsize
        for i in range(count):
            Blas._gemm(plan, a[i], b[i], c[i])


_HOST_BATCHED = types.SimpleNamespace(
    empty=np.empty, ascontiguousarray=np.ascontiguousarray, matmul=np.matmul,
    broadcast_to=np.broadcast_to, lib=np.lib)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_shape,b_shape", [
    ((3, 4, 5), (3, 5, 2)), ((3, 4, 5), (5, 2)), ((4, 5), (3, 5, 2)),
    ((2, 3, 4, 5), (2, 3, 5, 2)), ((2, 1, 4, 5), (1, 3, 5, 2)), ((3, 1, 5), (3, 5, 1)),
    ((2, 4, 0), (2, 0, 3)), ((0, 4, 5), (0, 5, 2))])
def test_batched_products_equal_numpy(dtype, a_shape, b_shape):
    """(..., m, k) @ (..., k, n) as one strided batched GEMM: broadcast batch dims (stride
    0), 4-D batches, transposed, sliced and reversed operands, a strided output, empty
    sizes."""
    rng = np.random.default_rng(len(a_shape) * 10 + len(b_shape))
    blas = _BatchedHostBlas()
    a = rng.standard_normal(a_shape).astype(dtype)
    b = rng.standard_normal(b_shape).astype(dtype)
    forms = {"c": lambda x: x,
             "t": lambda x: np.ascontiguousarray(np.swapaxes(x, -1, -2)).swapaxes(-1, -2),
             "wide": lambda x: np.concatenate([x, x[..., :1]], axis=-1)[..., :x.shape[-1]],
             "reversed": lambda x: np.ascontiguousarray(x[::-1])[::-1]}
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    for fa, make_a in forms.items():
        for fb, make_b in forms.items():
            got = gemm.matmul_through(blas, _HOST_BATCHED, make_a(a), make_b(b))
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=fa + fb)
    out = np.full(want.shape[:-1] + (want.shape[-1] + 1,), np.nan, dtype)[..., 1:]
    assert gemm.matmul_through(blas, _HOST_BATCHED, a, b, out) is out
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_batched_cublas_call_carries_the_strides_and_count():
    lib = _RecordingLib()
    blas = gemm.CublasLib(lib, "libcublas.so.test")

    def array(ptr):
        return types.SimpleNamespace(data=types.SimpleNamespace(ptr=ptr),
                                     device=types.SimpleNamespace(id=0))
    xp = types.SimpleNamespace(empty=lambda n, dtype: array(9000), cuda=types.SimpleNamespace(
        get_current_stream=lambda: types.SimpleNamespace(ptr=5)))
    plan = (gemm.OP_N, gemm.OP_T, 2, 3, 4, 2, 3, 2)
    blas.gemm_batched(xp, np.float64, plan, (8, 0, 6), 7, array(100), array(200), array(300))
    name, args = lib.calls[-1]
    assert name == "cublasDgemmStridedBatched"
    assert args[1:6] == plan[:5] and args[7:10] == (100, 2, 8) and args[10:13] == (200, 3, 0)
    assert args[14:] == (300, 2, 6, 7)
    assert args[6]._obj.value == 1.0 and args[13]._obj.value == 0.0
    assert lib.cublasDgemmStridedBatched.argtypes[9] is ctypes.c_longlong


def test_batched_product_writes_a_strided_output_in_place():
    """An output whose matrices have contiguous rows one fixed stride apart (the time-major
    view of a batch-major array, as StepProjection's data gradient) is the GEMM's own C: no
    temporary and no copy back. An output in no such form still gets a temporary."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((4, 3, 5)).astype(np.float32)  # (T, N, H)
    w = rng.standard_normal((5, 6)).astype(np.float32)
    written = []

    class Recording(_BatchedHostBlas):
        def gemm_batched(self, xp, dtype, plan, strides, count, x, y, c):
            written.append(c)
            super().gemm_batched(xp, dtype, plan, strides, count, x, y, c)

    batch_major = np.full((3, 4, 6), np.nan, np.float32)  # (N, T, k)
    out = batch_major.transpose(1, 0, 2)
    assert gemm.matmul_through(Recording(), _HOST_BATCHED, a, w, out) is out
    np.testing.assert_allclose(out, a @ w, rtol=1e-5, atol=1e-5)
    assert np.shares_memory(written[-1], batch_major)
    columns = np.full((4, 6, 3), np.nan, np.float32).transpose(0, 2, 1)  # rows not contiguous
    gemm.matmul_through(Recording(), _HOST_BATCHED, a, w, columns)
    np.testing.assert_allclose(columns, a @ w, rtol=1e-5, atol=1e-5)
    assert not np.shares_memory(written[-1], columns)
