"""CUDA graphs: executors capture their steps after a warm-up and replay them, with results
bit-identical to eager runs; GEMMs go through our own cuBLAS handle, which capture allows.

The GEMM layout cases run everywhere (against a NumPy model of column-major cuBLAS). The
capture cases need a GPU or the strict CuPy stand-in (tests/test_fake_gpu.py runs this file
on it), where a capture records kernels without running them, a launch runs the recording,
temporaries made during capture are poisoned until the graph fills them, and a host read,
host-to-device copy or synchronisation during capture raises, as on a GPU.
"""
import os
import sys
import types

import numpy as np
import pytest

import minimod as mx
from minimod import backend, cuda_graph, gemm
from minimod.executor import graphs as exe_graphs
from minimod.flat import update_graph_status

from ..conftest import needs_gpu
from ..fake_cuda_graphs import Blas

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")


# ----------------------------------------------------------------------------- GEMM layouts

class _HostBlas:
    """The stand-in's column-major GEMM over plain NumPy arrays."""

    def gemm(self, xp, dtype, plan, a, b, c):
        Blas._gemm(plan, a, b, c)


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


def test_capture_refusals_name_what():
    assert not cuda_graph.capturing()
    cuda_graph.forbid_in_capture("anything")  # no capture: nothing to refuse
    cuda_graph._CAPTURING[0] = True
    try:
        with pytest.raises(cuda_graph.CaptureError, match="drawing random numbers"):
            backend.rng(types.SimpleNamespace())
        with pytest.raises(cuda_graph.CaptureError, match="cupy.matmul"):
            gemm.matmul_through(None, _HOST, np.ones((2, 2)), np.ones((2, 2)))
    finally:
        cuda_graph._CAPTURING[0] = False


def test_cpu_executors_never_capture(monkeypatch):
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    exe = sym.simple_bind(mx.cpu(), data=(2, 4))
    for _ in range(3):
        exe.forward(is_train=False)
    assert exe.graph_status() == {"all": "eager: not on a GPU"}


# ----------------------------------------------------------------------------- on a GPU

def _workloads():
    sys.path.insert(0, BENCH)
    try:
        import workloads
    finally:
        sys.path.remove(BENCH)
    return workloads


def _train(net, graphs: bool, monkeypatch, steps=6, lr_change_at=3):
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1" if graphs else "0")
    wl = _workloads()
    mod, batches = wl.make_module(mx, net, 8, context=mx.gpu(0))
    for b in batches:
        b.data = [d.as_in_context(mx.gpu(0)) for d in b.data]
        b.label = [lab.as_in_context(mx.gpu(0)) for lab in b.label]
    outputs = []
    for i in range(steps):
        if i == lr_change_at:
            getattr(mod, "_curr_module", mod)._optimizer.lr *= 0.5  # read by the next update
        mod.forward_backward(batches[i % len(batches)])
        mod.update()
        outputs.append(mod.get_outputs()[0].asnumpy())
    args, aux = mod.get_params()
    return mod, outputs, {k: v.asnumpy() for k, v in {**args, **aux}.items()}


def _executor(mod):
    inner = getattr(mod, "_curr_module", mod)
    return inner._exec_group.execs[0]


@needs_gpu
@pytest.mark.parametrize("net", ["mlp", "lenet", "lstm", "lstm_fused"])
def test_training_with_graphs_is_bit_identical(net, monkeypatch):
    _, want_out, want = _train(net, False, monkeypatch)
    # on a GPU, atomics (Embedding's scatter-add) can make two eager runs differ; then graphs
    # are held to that run-to-run spread instead of to every bit
    _, again_out, again = _train(net, False, monkeypatch)
    exact = all(np.array_equal(again[k], want[k]) for k in want) and all(
        np.array_equal(a, b) for a, b in zip(again_out, want_out))
    assert exact or not hasattr(backend._cupy, "host_reads")  # the stand-in is exact
    same = np.testing.assert_array_equal if exact else (
        lambda got, ref, err_msg: np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5,
                                                             err_msg=err_msg))
    if hasattr(backend._cupy, "host_reads"):
        from tests import fake_cuda_graphs
        fake_cuda_graphs.reset_allocations()
    mod, got_out, got = _train(net, True, monkeypatch)
    status = _executor(mod).graph_status()
    # nets whose outputs are all losses run one 'train' list; others forward then backward
    assert (status.get(("train", True)) == "graph" or status.get(("forward", True)) ==
            status.get(("backward", True)) == "graph"), status
    assert all(v == "graph" for v in status.values()), status
    # the optimizer's update too: one graph per flat buffer, its scalars in device memory,
    # so the learning rate halved mid-run reached the replays without a new capture
    update = update_graph_status(getattr(mod, "_curr_module", mod)._updater)
    assert update and all(v == "graph" for v in update.values()), update
    assert len(update) == len(_executor(mod).flat_params), update
    for i, (a, b) in enumerate(zip(want_out, got_out)):
        same(b, a, err_msg="step %d output" % i)
    for name in want:
        same(got[name], want[name], err_msg=name)
    if hasattr(backend._cupy, "host_reads"):  # the stand-in notes who allocated in capture
        from tests import fake_cuda_graphs
        assert {who for who, _ in fake_cuda_graphs.allocations()} <= {"private"}


@needs_gpu
def test_inference_forward_is_captured_and_equal(monkeypatch):
    sym = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(
        mx.sym.Activation(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=16,
                                                name="fc1"), act_type="relu"),
        num_hidden=4, name="fc2"), name="softmax")
    results = {}
    for graphs in (False, True):
        monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1" if graphs else "0")
        exe = sym.simple_bind(mx.gpu(0), data=(5, 8), grad_req="null")
        rng = np.random.RandomState(1)
        for arr in exe.arg_dict.values():
            arr[:] = rng.uniform(-1, 1, arr.shape)
        outs = []
        for _ in range(4):
            exe.arg_dict["data"][:] = rng.uniform(-1, 1, (5, 8))  # new data each call
            outs.append(exe.forward(is_train=False)[0].asnumpy())
        results[graphs] = outs
        if graphs:
            assert exe.graph_status() == {("forward", False): "graph"}
    for a, b in zip(results[False], results[True]):
        np.testing.assert_array_equal(b, a)


@needs_gpu
def test_steps_that_cannot_be_captured_stay_eager(monkeypatch):
    """A gamma sample draws from CuPy's generator, whose position lives on the host: its step
    is refused, says why, and still trains. (Dropout, uniform and normal draw from
    minimod.device_rng and are captured: tests/executor/test_graph_random.py.)"""
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1")
    data = mx.sym.Variable("data")
    noisy = data + mx.sym.random.gamma(alpha=2.0, shape=(4, 6), name="noise")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(noisy, num_hidden=3, name="fc"),
                               name="softmax")
    exe = net.simple_bind(mx.gpu(0), data=(4, 6))
    for arr in exe.arg_dict.values():
        arr[:] = 0.5
    for _ in range(3):
        exe.forward_backward()
    why = exe.graph_status()[("train", True)]
    assert why.startswith("eager: CaptureError") and "random numbers" in why, why
    assert "noise" in why, why
    assert np.isfinite(exe.grad_dict["fc_weight"].asnumpy()).all()


@needs_gpu
def test_monitor_and_switch_keep_steps_eager(monkeypatch):
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "0")
    exe = sym.simple_bind(mx.gpu(0), data=(2, 4))
    exe.forward()
    exe.forward()
    assert exe.graph_status() == {"all": "eager: MINIMOD_CUDA_GRAPHS=0"}
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1")
    exe = sym.simple_bind(mx.gpu(0), data=(2, 4))
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append(name))
    for _ in range(3):
        exe.forward()
    assert exe.graph_status() == {} and len(seen) >= 3  # nothing captured, monitor ran
    exe.set_monitor_callback(None)
    for _ in range(2):
        exe.forward()
    assert exe.graph_status() == {("forward", False): "graph"}
    assert exe_graphs.WARMUP == 1


class _Scale(mx.operator.CustomOp):
    """y = 2x through the host (a custom op's Python code reads its inputs there)."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.array(in_data[0].asnumpy() * 2))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], mx.nd.array(out_grad[0].asnumpy() * 2))


@mx.operator.register("graphs_test_scale")
class _ScaleProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def create_operator(self, ctx, shapes, dtypes):
        return _Scale()


@needs_gpu
def test_a_step_reading_the_host_is_refused_and_stays_correct(monkeypatch):
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1")
    net = mx.sym.FullyConnected(mx.sym.Custom(mx.sym.Variable("data"),
                                              op_type="graphs_test_scale"), num_hidden=2,
                                name="fc")
    exe = net.simple_bind(mx.gpu(0), data=(3, 4), grad_req="null")
    for arr in exe.arg_dict.values():
        arr[:] = 1.0
    for _ in range(3):
        out = exe.forward()[0].asnumpy()
    np.testing.assert_array_equal(out, np.full((3, 2), 8.0 + 1.0, np.float32))
    why = exe.graph_status()[("forward", False)]
    assert why.startswith("eager:") and "host" in why, why


@needs_gpu
def test_each_bucket_keeps_its_own_graphs(monkeypatch):
    """A BucketingModule alternating two sequence lengths: each bucket's executor captures
    its own step, and training matches the eager run bit for bit."""
    wl = _workloads()

    def run(graphs):
        monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1" if graphs else "0")
        mod, _ = wl.make_module(mx, "lstm", 4, context=mx.gpu(0))
        rng = np.random.RandomState(3)
        for i in range(6):
            seq = (wl.SEQ_LEN, wl.SEQ_LEN - 2)[i % 2]
            data = mx.nd.array(rng.randint(0, 50, (4, seq)), ctx=mx.gpu(0))
            label = mx.nd.array(rng.randint(0, 50, (4, seq)), ctx=mx.gpu(0))
            batch = mx.io.DataBatch(
                data=[data], label=[label], bucket_key=seq,
                provide_data=[mx.io.DataDesc("data", (4, seq))],
                provide_label=[mx.io.DataDesc("softmax_label", (4, seq))])
            mod.forward_backward(batch)
            mod.update()
        args, _ = mod.get_params()
        return mod, {k: v.asnumpy() for k, v in args.items()}

    _, want = run(False)
    mod, got = run(True)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    buckets = mod._buckets
    assert len(buckets) == 2
    for key, bucket in buckets.items():
        status = bucket._exec_group.execs[0].graph_status()
        assert status and all(v == "graph" for v in status.values()), (key, status)


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
    import ctypes
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
    import ctypes
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
