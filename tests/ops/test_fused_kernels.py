"""The fused CuPy kernels (backend.ElementwiseSpec), checked without a GPU.

On CuPy, Activation (sigmoid forward; tanh, sigmoid and relu gradients), the RNN op's LSTM step
(forward and backward) and SGD's update run one ElementwiseKernel each instead of a chain of
ufunc passes. On NumPy the ops run their passes. `backend.emulate_fused_kernels(True)` makes
NumPy callers take the fused path too, with each kernel's CUDA body evaluated by NumPy, so
these tests run the fused code paths (which arrays go where, in-place outputs, the body's
arithmetic) against the ufunc passes on the CPU. NVRTC (CUDA's runtime compiler, a wheel in
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
from minimod import backend, kernels  # noqa: F401  (kernels: registers Activation's kernels)
from minimod.ndarray import update_steps  # noqa: F401  (registers SGD's kernels)
from minimod.ops import rnn  # noqa: F401  (registers the LSTM step's kernels)

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
            "lstm_step_grad", "sgd", "sgd_mom", "sgd_clip", "sgd_mom_clip"} <= names
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


def test_the_lstm_kernels_really_run_under_emulation(monkeypatch, emulated):
    calls = []
    real = backend.elementwise

    def spy(xp, spec):
        calls.append(spec.name)
        return real(xp, spec)

    monkeypatch.setattr(backend, "elementwise", spy)
    sym = mx.sym.RNN(V("data"), V("params"), V("state"), V("state_cell"), state_size=3,
                     num_layers=1, mode="lstm", name="rnn")
    _fwd_bwd(sym, {"data": (2, 2, 3), "state": (1, 2, 3), "state_cell": (1, 2, 3)})
    assert "lstm_step" in calls and "lstm_step_grad" in calls


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
