"""The fused CuPy kernels (backend.ElementwiseSpec), checked without a GPU.

On CuPy, Activation (sigmoid forward; tanh, sigmoid and relu gradients), the RNN op's steps
(lstm, gru, rnn_tanh, rnn_relu; forward and backward), SoftmaxOutput's index-label gradient
and SGD's update run one ElementwiseKernel each instead of a chain of ufunc passes. On NumPy
the ops run their passes. `backend.emulate_fused_kernels(True)` makes NumPy callers take the
fused path too, with each kernel's CUDA body evaluated by NumPy, so
these tests run the fused code paths (which arrays go where, in-place outputs, the body's
arithmetic) against the ufunc passes on the CPU (the GRU and vanilla RNN steps in
test_fused_kernels_rnn.py). NVRTC (CUDA's runtime compiler, a wheel in
the `nvrtc` extra that CI installs) needs no GPU, so every body is also compiled here, for float
and double, in a wrapper shaped like the code CuPy generates around it. Running the compiled
kernels needs a GPU: test_fused_kernels_compile_and_match_on_gpu does that where one is present.
"""
import ctypes
import glob
import os

import numpy as np
import pytest

import minimod as mx
from minimod import backend, kernels  # (kernels: registers Activation's, SoftmaxOutput's)
from minimod.ndarray import update_steps  # noqa: F401  (registers SGD's kernels)
from minimod.ops import rnn  # noqa: F401  (registers the RNN steps' kernels)
from minimod.ops.registry import create_op

from ..conftest import ctx_params

V = mx.sym.Variable


@pytest.fixture
def emulated():
    previous = backend.emulate_fused_kernels(True)
    yield
    backend.emulate_fused_kernels(previous)


def test_every_kernel_body_reads_in_the_checked_subset():
    names = set(backend.FUSED_SPECS)
    assert {"sigmoid", "tanh_grad", "sigmoid_grad", "relu_grad", "lstm_step",
            "lstm_step_grad", "gru_step", "gru_step_grad", "rnn_tanh_step",
            "rnn_tanh_step_grad", "rnn_relu_step", "rnn_relu_step_grad", "softmax_output_grad",
            "sgd", "sgd_mom", "sgd_clip", "sgd_mom_clip"} <= names
    for spec in backend.FUSED_SPECS.values():
        kernel = backend._EmulatedKernel(spec)  # raises on statements outside the subset
        inputs, outputs = spec.param_names()
        # CuPy's kernels reserve `i` (the element index) and names starting with '_'
        assert not {"i", "n"} & set(inputs + outputs), spec.name
        assert all(not p.startswith("_") for p in inputs + outputs), spec.name
        locals_ = {n for n, _ in kernel.statements} - set(outputs)
        assert not locals_ & set(inputs), "%s assigns an input" % spec.name
        # every output is written by the body
        assert set(outputs) <= {n for n, _ in kernel.statements}, spec.name


def test_emulation_is_off_by_default_and_numpy_gets_no_kernel():
    assert backend.elementwise(np, backend.FUSED_SPECS["sigmoid"]) is None


def _fwd_bwd(sym, shapes, seed=0):
    exe = sym.simple_bind(mx.cpu(), **shapes)
    rng = np.random.RandomState(seed)
    for name in sorted(exe.arg_dict):
        exe.arg_dict[name][:] = rng.uniform(-1, 1, exe.arg_dict[name].shape)
    outs = [o.asnumpy() for o in exe.forward(is_train=True)]
    heads = [mx.nd.array(rng.uniform(-1, 1, o.shape)) for o in outs]
    exe.backward(out_grads=heads)
    return outs, {k: v.asnumpy() for k, v in exe.grad_dict.items()}


def _compare(sym, shapes, emulate_on):
    want = _fwd_bwd(sym, shapes)
    with_fused = None
    previous = backend.emulate_fused_kernels(True)
    try:
        with_fused = _fwd_bwd(sym, shapes)
    finally:
        backend.emulate_fused_kernels(previous)
    for a, b in zip(want[0], with_fused[0]):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
    for name in want[1]:
        np.testing.assert_allclose(with_fused[1][name], want[1][name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)


@pytest.mark.parametrize("act", ["sigmoid", "tanh", "relu"])
def test_fused_activation_equals_the_ufunc_passes(act):
    sym = mx.sym.Activation(mx.sym.FullyConnected(V("data"), num_hidden=7, name="fc"),
                            act_type=act)
    _compare(sym, {"data": (5, 4)}, True)


@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, True)])
def test_fused_lstm_step_equals_the_ufunc_passes(layers, bidirectional):
    dirs = 2 if bidirectional else 1
    sym = mx.sym.RNN(V("data"), V("params"), V("state"), V("state_cell"), state_size=6,
                     num_layers=layers, bidirectional=bidirectional, mode="lstm",
                     state_outputs=True, name="rnn")
    shapes = {"data": (5, 3, 4), "state": (layers * dirs, 3, 6),
              "state_cell": (layers * dirs, 3, 6)}
    _compare(sym, shapes, True)


def _softmax_output_case(attrs, data_shape, label_shape, dtype="float32", seed=0):
    """SoftmaxOutput `op`, data, labels (in range, out of range both ways, fractional, and
    ignore_label = 1 among them) and the forward's probabilities."""
    rng = np.random.RandomState(seed)
    op = create_op("SoftmaxOutput", attrs)
    x = (rng.randn(*data_shape) * 3).astype(dtype)
    classes = data_shape[-1] if op.mode == "preserve" else data_shape[1]
    label = rng.randint(-1, classes + 1, label_shape) + 0.25 * rng.randint(0, 4, label_shape)
    label.reshape(-1)[:2] = [1.0, 1.5]  # ignored either way when use_ignore is on
    label = label.astype("float32")
    prob = np.empty_like(x)
    op.forward(np, [x, label], [], [prob], True)
    return op, x, label, prob


def _softmax_output_grads(op, x, label, prob, fused: bool):
    """(data gradient, label gradient) of one backward, through the bound step."""
    grads = [np.full(x.shape, 7, x.dtype), np.full(label.shape, 7, np.float32)]
    previous = backend.emulate_fused_kernels(fused)
    try:
        run = kernels.bind_backward(np, op, [None], [x, label], [prob], grads, [])
        run(np, True)
    finally:
        backend.emulate_fused_kernels(previous)
    return grads


_SOFTMAX_LAYOUTS = [({}, (6, 5), (6,)), ({}, (4, 2, 3), (4,)),
                    ({"multi_output": "True"}, (3, 4, 5), (3, 5)),
                    ({"preserve_shape": "True"}, (2, 3, 4), (2, 3))]


@pytest.mark.parametrize("layout", range(len(_SOFTMAX_LAYOUTS)))
@pytest.mark.parametrize("normalization", ["null", "batch", "valid"])
@pytest.mark.parametrize("use_ignore,smooth_alpha,grad_scale", [
    (False, 0.0, 1.0), (True, 0.0, 0.3), (False, 0.1, 2.0), (True, 0.2, 1.0)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_softmax_output_gradient_equals_the_op(layout, normalization, use_ignore,
                                                     smooth_alpha, grad_scale, dtype,
                                                     monkeypatch):
    extra, data_shape, label_shape = _SOFTMAX_LAYOUTS[layout]
    attrs = dict(extra, normalization=normalization, use_ignore=str(use_ignore),
                 ignore_label="1", smooth_alpha=str(smooth_alpha), grad_scale=str(grad_scale))
    op, x, label, prob = _softmax_output_case(attrs, data_shape, label_shape, dtype)
    want = [np.empty_like(x), np.empty_like(label)]
    op.backward(np, [None], [x, label], [prob], want, [])
    calls = []
    real = backend.elementwise
    monkeypatch.setattr(backend, "elementwise",
                        lambda xp, spec: calls.append(spec.name) or real(xp, spec))
    grad, label_grad = _softmax_output_grads(op, x, label, prob, fused=True)
    assert calls == ["softmax_output_grad"]
    np.testing.assert_array_equal(grad, want[0])  # bit for bit (up to the sign of zero)
    assert not label_grad.any()
    if use_ignore:
        ignored = (op._labels(*op._views(prob)[:1], label).astype(int) == 1)
        assert ignored.any() and not np.take(grad.reshape(op._views(prob)[0].shape), 0,
                                             axis=1)[ignored].any()


def test_fused_softmax_output_reads_the_labels_at_every_call(emulated):
    """The labels (and, for 'valid', their count) are read when the step runs, not when it
    is bound."""
    op, x, label, prob = _softmax_output_case(
        {"normalization": "valid", "use_ignore": "True", "ignore_label": "1"}, (5, 4), (5,))
    grad = np.empty_like(x)
    run = kernels.bind_backward(np, op, [None], [x, label], [prob], [grad], [])
    run(np, True)
    label[:] = [1, 1, 1, 3, 0]  # two valid labels now
    run(np, True)
    want = np.empty_like(x)
    op.backward(np, [None], [x, label], [prob], [want], [])
    np.testing.assert_array_equal(grad, want)
    np.testing.assert_allclose(grad[3], (prob[3] - np.eye(4)[3]) / 2, rtol=1e-6)


@pytest.mark.parametrize("attrs,label_like_data", [({"out_grad": "True"}, False),
                                                   ({}, True)])
def test_softmax_output_cases_the_kernel_does_not_cover_keep_the_op(attrs, label_like_data,
                                                                    monkeypatch, emulated):
    """A head gradient (out_grad) or probability labels: the op's own backward runs."""
    calls = []
    real = backend.elementwise
    monkeypatch.setattr(backend, "elementwise",
                        lambda xp, spec: calls.append(spec.name) or real(xp, spec))
    op, x, label, prob = _softmax_output_case(attrs, (4, 3), (4,))
    if label_like_data:
        label = np.random.RandomState(2).dirichlet(np.ones(3), 4).astype(np.float32)
    grads = [np.empty_like(x), np.empty_like(label)]
    head = np.full_like(x, 0.5)
    run = kernels.bind_backward(np, op, [head], [x, label], [prob], grads, [])
    assert "softmax_output_grad" not in calls
    if run is None:  # the executor runs op.backward itself
        return
    run(np, True)
    want = [np.empty_like(x), np.empty_like(label)]
    op.backward(np, [head], [x, label], [prob], want, [])
    np.testing.assert_array_equal(grads[0], want[0])


@pytest.mark.parametrize("ctx", [p for p in ctx_params() if p.id != "cpu"])
@pytest.mark.parametrize("normalization", ["null", "valid"])
def test_fused_softmax_output_on_the_device_reads_nothing_back(ctx, normalization):
    """On a GPU (or the stand-in CuPy, which counts host reads) the fused gradient, 'valid's
    count included, stays on the device, and equals the CPU's."""
    net = mx.sym.SoftmaxOutput(V("data"), V("softmax_label"), normalization=normalization,
                               use_ignore=True, ignore_label=2, name="softmax")
    rng = np.random.RandomState(5)
    x = rng.randn(8, 6).astype(np.float32)
    label = rng.randint(0, 6, 8).astype(np.float32)
    grads = {}
    for where in (mx.cpu(), ctx):
        exe = net.simple_bind(where, data=x.shape, softmax_label=label.shape)
        exe.arg_dict["data"][:] = x
        exe.arg_dict["softmax_label"][:] = label
        exe.forward(is_train=True)
        cupy = backend._cupy if where is ctx else None
        if hasattr(cupy, "reset_host_reads"):
            cupy.reset_host_reads()
        exe.backward()
        if hasattr(cupy, "host_reads"):
            assert cupy.host_reads() == []
        grads[where.device_type] = exe.grad_dict["data"].asnumpy()
    np.testing.assert_allclose(grads["gpu"], grads["cpu"], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("clip", [None, 0.05])
@pytest.mark.parametrize("wd", [0.0, 1e-3])
def test_fused_sgd_equals_the_ufunc_passes(momentum, clip, wd):
    rng = np.random.RandomState(4)
    w0 = rng.uniform(-1, 1, (6, 5)).astype(np.float32)
    grads = [rng.uniform(-1, 1, (6, 5)).astype(np.float32) for _ in range(4)]

    def run(emulate):
        previous = backend.emulate_fused_kernels(emulate)
        try:
            o = mx.optimizer.SGD(learning_rate=0.1, momentum=momentum, wd=wd,
                                 clip_gradient=clip, rescale_grad=0.5)
            w = mx.nd.array(w0)
            state = o.create_state(0, w)
            for g in grads:
                o.update(0, w, mx.nd.array(g), state)
            return w.asnumpy()
        finally:
            backend.emulate_fused_kernels(previous)

    np.testing.assert_allclose(run(True), run(False), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_fused_clipped_sgd_keeps_a_nan_gradient_and_clips_infinities(momentum):
    """CUDA's min and max drop a NaN (the emulator evaluates them so); the clipped kernels
    keep it, as MXNet's clip and the ufunc passes do, and clip +-inf to +-clip."""
    g = np.array([[np.nan, np.inf, -np.inf, 0.3, -0.01]], np.float32)

    def run(emulate):
        previous = backend.emulate_fused_kernels(emulate)
        try:
            o = mx.optimizer.SGD(learning_rate=0.1, momentum=momentum, clip_gradient=0.05)
            w = mx.nd.array(np.ones_like(g))
            o.update(0, w, mx.nd.array(g), o.create_state(0, w))
            return w.asnumpy()
        finally:
            backend.emulate_fused_kernels(previous)

    fused = run(True)
    np.testing.assert_array_equal(fused, run(False))
    assert np.isnan(fused[0, 0]) and np.isfinite(fused[0, 1:]).all()


@pytest.mark.parametrize("ctx", [p for p in ctx_params() if p.id != "cpu"])
def test_fused_kernels_compile_and_match_on_gpu(ctx):
    """Each kernel compiled by CuPy gives what its NumPy evaluation gives."""
    xp = backend.xp_for(ctx)
    rng = np.random.RandomState(0)
    for spec in backend.FUSED_SPECS.values():
        inputs, outputs = spec.param_names()
        host = [rng.uniform(0.1, 0.9, (4, 5)).astype(np.float32) for _ in inputs + outputs]
        want = [a.copy() for a in host]
        backend._EmulatedKernel(spec)(*want)
        dev = [backend.to_context(a, ctx, copy=True) for a in host]
        with backend.device_scope(ctx):
            backend.elementwise(xp, spec)(*dev)
        for name, a, b in zip(inputs + outputs, want, dev):
            np.testing.assert_allclose(backend.asnumpy(b), a, rtol=1e-5, atol=1e-6,
                                       err_msg="%s: %s" % (spec.name, name))


def _nvrtc():
    """libnvrtc from the nvidia-cuda-nvrtc wheel, or None."""
    try:
        import nvidia.cuda_nvrtc as pkg
    except ImportError:
        return None
    for folder in pkg.__path__:
        for path in sorted(glob.glob(os.path.join(folder, "lib", "libnvrtc.so*"))):
            if ".alt." not in path:
                return ctypes.CDLL(path)
    return None


def _compile(lib, source: str, name: str):
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None,
                                  None) == 0
    opts = (ctypes.c_char_p * 2)(b"-arch=compute_70", b"--std=c++14")
    status = lib.nvrtcCompileProgram(prog, 2, opts)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return status, log.value.decode(errors="replace")


@pytest.mark.skipif(_nvrtc() is None, reason="NVRTC not installed (pip install -e '.[nvrtc]')")
@pytest.mark.parametrize("ctype", ["float", "double"])
def test_every_kernel_body_compiles_with_nvrtc(ctype):
    lib = _nvrtc()
    for spec in backend.FUSED_SPECS.values():
        inputs, outputs = spec.param_names()
        params = ", ".join(["const T* _raw_%s" % n for n in inputs]
                           + ["T* _raw_%s" % n for n in outputs] + ["long long _n"])
        # as in CuPy's elementwise code: inputs are const values, outputs references
        loads = "".join(["  const T %s = _raw_%s[_k];\n" % (n, n) for n in inputs]
                        + ["  T &%s = _raw_%s[_k];\n" % (n, n) for n in outputs])
        source = ("typedef %s T;\nextern \"C\" __global__ void %s(%s) {\n"
                  "  long long _k = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                  "  if (_k >= _n) return;\n%s  %s\n}\n"
                  % (ctype, spec.name, params, loads, spec.body))
        status, log = _compile(lib, source, spec.name + ".cu")
        assert status == 0, "%s (T=%s) does not compile:\n%s" % (spec.name, ctype, log)


@pytest.mark.skipif(_nvrtc() is None, reason="NVRTC not installed (pip install -e '.[nvrtc]')")
def test_nvrtc_check_rejects_a_broken_body():
    status, log = _compile(_nvrtc(), "extern \"C\" __global__ void k(float* y) "
                           "{ y[0] = tanhh(y[0]); }", "broken.cu")
    assert status != 0 and "tanhh" in log
