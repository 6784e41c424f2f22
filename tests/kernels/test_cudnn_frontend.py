"""Convolution through nvidia-cudnn-frontend (minimod/kernels/cudnn_frontend.py), run on the CPU
against a NumPy stand-in for the frontend's `cudnn` module (tests/ops/fake_cudnn_frontend.py).

The stand-in refuses calls out of order and variant packs that do not match the graph, and its
made-up engines show in the numbers what FrontendOps asked for (a TF32 engine rounds float32
inputs, a nondeterministic one perturbs every run), so these tests check the plumbing and the
choices: results equal minimod's CPU path, graphs are built once per geometry, a repeated call
allocates nothing, the determinism and TF32 filters and cudnn_tune are applied, and
`backend.cudnn_status()` names the binding that runs. Only a GPU run checks the real frontend.
"""
import numpy as np
import pytest

import minimod as mx
from minimod import backend
from minimod.kernels import cudnn
from minimod.kernels.cudnn import CudnnConvolution, CudnnDeconvolution, CudnnPooling
from minimod.kernels.cudnn_frontend import FrontendOps

from ..ops import fake_cudnn
from ..ops import fake_cudnn_frontend as fe
from .test_cudnn_variants import CASES, _run, _variant_ops

V = mx.sym.Variable


@pytest.fixture
def frontend_on_cpu(monkeypatch):
    """FrontendOps over the stand-in, handed to the variants on the CPU."""
    fe.reset()
    monkeypatch.delenv("MINIMOD_CUDNN_TF32", raising=False)
    ops = FrontendOps(fe)
    # the per-dtype self-check's graphs would count too: it has tests of its own below
    ops.checked.update(float16=True, float32=True, float64=True)
    monkeypatch.setattr(cudnn, "cudnn_for", lambda ctx: ops)
    return ops


def test_the_self_check_runs_once_per_dtype_and_passes_on_the_stand_in(monkeypatch):
    fe.reset()
    ops = FrontendOps(fe, tf32=False)
    monkeypatch.setattr(cudnn, "cudnn_for", lambda ctx: ops)
    assert ops.serves(mx.cpu(), "float32") and ops.builds == 3
    assert ops.serves(mx.cpu(), "float32") and ops.builds == 3  # checked once
    assert ops.serves(mx.cpu(), "float64") and ops.builds == 6
    assert ops.refused == {}


@pytest.mark.parametrize("fault", ["raises", "wrong"])
def test_a_frontend_failing_its_self_check_leaves_the_im2col_path(fault, monkeypatch):
    """A dtype the installed frontend cannot run (or runs wrong) is refused once, said in
    cudnn_status, and the convolution keeps its own op."""
    fe.reset()
    ops = FrontendOps(fe, tf32=False)
    monkeypatch.setattr(cudnn, "cudnn_for", lambda ctx: ops)
    monkeypatch.setattr(backend, "_CUDNN_NOTES", [])
    real = FrontendOps.conv_backward_data

    def broken(self, w, gy, gx, *args, **kwargs):
        if fault == "raises":
            raise RuntimeError("no engine supports this graph")
        real(self, w, gy, gx, *args, **kwargs)
        gx *= 1.5
    monkeypatch.setattr(FrontendOps, "conv_backward_data", broken)
    sym = mx.sym.Convolution(V("data"), kernel=(3, 3), num_filter=4, name="c")
    _, _, exe = _run(sym, {"data": (2, 3, 7, 7)})
    assert CudnnConvolution not in _variant_ops(exe)
    assert not ops.serves(mx.cpu(), "float32")
    why = ops.refused["float32"]
    assert ("no engine" in why) if fault == "raises" else ("data gradient" in why), why
    assert "float32 convolution fails the frontend's self-check" in backend.cudnn_status()
    assert "forward" not in why  # the parts that were right are not blamed


def _plans_run():
    return [e["plan"] for e in fe.STATE["executions"]]


def _kinds_run():
    return {e["graph"].op[0] for e in fe.STATE["executions"]}


@pytest.mark.parametrize("case", sorted(CASES))
def test_frontend_variants_equal_the_cpu_path(case, monkeypatch):
    sym, shapes = CASES[case]()
    want_out, want_grads, _ = _run(sym, shapes)
    fe.reset()
    ops = FrontendOps(fe, tf32=False)
    monkeypatch.setattr(cudnn, "cudnn_for", lambda ctx: ops)
    got_out, got_grads, exe = _run(sym, shapes)
    kinds = _variant_ops(exe)
    assert CudnnConvolution in kinds or CudnnDeconvolution in kinds
    assert CudnnPooling not in kinds  # no pooling backward in the frontend: Pooling's own path
    assert _kinds_run() == {"fprop", "dgrad", "wgrad"}
    assert set(_plans_run()) == {"implicit_gemm"}  # deterministic, no TF32
    np.testing.assert_allclose(got_out, want_out, rtol=1e-4, atol=1e-5)
    assert set(got_grads) == set(want_grads)
    for name in want_grads:
        np.testing.assert_allclose(got_grads[name], want_grads[name], rtol=1e-4, atol=1e-5,
                                   err_msg=name)


GEOMETRIES = {  # x shape, w shape, pad, stride, dilate, groups
    "1d": ((2, 4, 13), (6, 2, 3), (1,), (2,), (2,), 2),
    "2d": ((2, 3, 9, 8), (4, 3, 3, 2), (1, 0), (1, 2), (1, 1), 1),
    "2d_groups": ((1, 6, 7, 7), (6, 2, 3, 3), (2, 1), (2, 2), (2, 1), 3),
    "3d": ((2, 2, 5, 6, 4), (3, 2, 2, 3, 2), (0, 1, 1), (1, 2, 1), (1, 1, 2), 1),
}


def _data(geometry, dtype, seed=0):
    xs, ws, pad, stride, dilate, groups = geometry
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, xs).astype(dtype)
    w = rng.uniform(-1, 1, ws).astype(dtype)
    b = rng.uniform(-1, 1, ws[0]).astype(dtype)
    out = [(i + 2 * p - d * (k - 1) - 1) // s + 1
           for i, k, p, s, d in zip(xs[2:], ws[2:], pad, stride, dilate)]
    gy = rng.uniform(-1, 1, (xs[0], ws[0]) + tuple(out)).astype(dtype)
    return x, w, b, gy, (pad, stride, dilate, groups)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_each_call_equals_the_reference_ops(name, dtype):
    """conv_forward (with and without bias), conv_backward_data and conv_backward_filter
    against CudnnOps over the NumPy reference of CuPy's wrapper."""
    x, w, b, gy, geo = _data(GEOMETRIES[name], dtype)
    ref, ops = cudnn.CudnnOps(fake_cudnn, fake_cudnn.Lib), FrontendOps(fe, tf32=False)
    tol = {"float16": 1e-2, "float32": 1e-5, "float64": 1e-12}[dtype]
    for bias in (None, b):
        want, got = np.empty_like(gy), np.full_like(gy, np.nan)
        ref.conv_forward(x, w, bias, want, *geo)
        ops.conv_forward(x, w, bias, got, *geo)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    want, got = np.empty_like(x), np.full_like(x, np.nan)
    ref.conv_backward_data(w, gy, want, *geo)
    ops.conv_backward_data(w, gy, got, *geo)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    want, got = np.empty_like(w), np.full_like(w, np.nan)
    ref.conv_backward_filter(x, gy, want, *geo)
    ops.conv_backward_filter(x, gy, got, *geo)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert ops.builds == 3 and ops.hits == 1  # the bias is an add, not another graph


def test_graphs_are_built_once_per_geometry_and_reused(frontend_on_cpu):
    ops = frontend_on_cpu
    sym, shapes = CASES["lenet_block"]()
    _run(sym, shapes)
    first = ops.builds
    assert first == 6  # each of the two convolutions: fprop, dgrad, wgrad
    assert len(fe.STATE["graphs"]) == first
    _run(sym, shapes, seed=1)
    _run(sym, shapes, seed=2)
    assert ops.builds == first and ops.hits == 2 * first
    x, w, _, gy, (pad, stride, dilate, groups) = _data(GEOMETRIES["2d"], "float32")
    ops.conv_forward(x, w, None, np.empty_like(gy), pad, stride, dilate, groups)
    assert ops.builds == first + 1
    y = np.empty((2, 4, 7, 4), np.float32)  # without padding
    for _ in range(2):
        ops.conv_forward(x, w, None, y, (0, 0), stride, dilate, groups)
    assert ops.builds == first + 2


def test_a_repeated_call_allocates_nothing(frontend_on_cpu):
    """Strided input and destination need scratch arrays; the second call reuses them and
    the very same workspace, sized as the plan asks."""
    ops = frontend_on_cpu
    x, w, _, gy, geo = _data(GEOMETRIES["2d"], "float32")
    wide_x = np.zeros(x.shape[:3] + (2 * x.shape[3],), np.float32)
    wide_x[..., ::2] = x
    big = np.zeros(gy.shape[:3] + (2 * gy.shape[3],), np.float32)
    y = big[..., 1::2]
    assert not y.flags.c_contiguous and not wide_x[..., ::2].flags.c_contiguous
    ops.conv_forward(wide_x[..., ::2], w, None, y, *geo)
    allocated = ops.allocations
    assert allocated == 3  # workspace, input scratch, output scratch
    first = y.copy()
    y[...] = 0
    ops.conv_forward(wide_x[..., ::2], w, None, y, *geo)
    assert ops.allocations == allocated and ops.builds == 1
    np.testing.assert_array_equal(y, first)
    assert not big[..., ::2].any()
    runs = fe.STATE["executions"]
    assert runs[0]["workspace"] is runs[1]["workspace"]
    assert runs[0]["workspace"].nbytes == runs[0]["graph"].get_workspace_size() == 4096


def test_a_plan_needing_no_workspace_still_gets_one(frontend_on_cpu, monkeypatch):
    """Frontend 1.32 refuses an empty workspace even where the plan needs none (seen on an
    H100: the float32 self-check failed and convolution fell back to im2col), so the workspace
    handed over is never empty."""
    monkeypatch.setattr(fe, "ENGINES", [("direct", set(), 0, 0.0)] + fe.ENGINES)
    ops = frontend_on_cpu
    x, w, _, gy, geo = _data(GEOMETRIES["2d"], "float32")
    want, got = np.empty_like(gy), np.full_like(gy, np.nan)
    cudnn.CudnnOps(fake_cudnn, fake_cudnn.Lib).conv_forward(x, w, None, want, *geo)
    ops.conv_forward(x, w, None, got, *geo)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    run = fe.STATE["executions"][-1]
    assert run["plan"] == "direct" and run["graph"].get_workspace_size() == 0
    assert run["workspace"].size > 0


def test_deterministic_and_no_tf32_by_default(frontend_on_cpu):
    ops = frontend_on_cpu
    x, w, _, gy, geo = _data(GEOMETRIES["2d"], "float32")
    y1, y2 = np.empty_like(gy), np.empty_like(gy)
    ops.conv_forward(x, w, None, y1, *geo)
    ops.conv_backward_filter(x, gy, np.empty_like(w), *geo)
    graph = fe.STATE["graphs"][0]
    N = fe.numerical_note
    assert set(graph.filters["numeric"]) == {N.NONDETERMINISTIC, N.TENSOR_CORE,
                                             N.DOWN_CONVERT_INPUTS}
    assert graph.filters["modes"] == [fe.heur_mode.A, fe.heur_mode.FALLBACK]
    assert graph.filters["policy"] == fe.build_plan_policy.HEURISTICS_CHOICE
    ops.conv_forward(x, w, None, y2, *geo)
    np.testing.assert_array_equal(y1, y2)  # repeats bit for bit
    # half precision may use tensor cores; still no nondeterministic engine
    h = [a.astype(np.float16) for a in (x, w, gy)]
    ops.conv_forward(h[0], h[1], None, np.empty_like(h[2]), *geo)
    assert fe.STATE["graphs"][-1].filters["numeric"] == [N.NONDETERMINISTIC]
    assert _plans_run() == ["implicit_gemm"] * 3 + ["tf32_tensor_core"]


def test_tf32_on_request(monkeypatch):
    """MINIMOD_CUDNN_TF32=1 lets float32 take the tensor-core engine: the numbers move by about
    TF32's precision, which the default refuses."""
    fe.reset()
    monkeypatch.setenv("MINIMOD_CUDNN_TF32", "1")
    ops = FrontendOps(fe)
    x, w, _, gy, geo = _data(GEOMETRIES["2d"], "float32")
    got, want = np.empty_like(gy), np.empty_like(gy)
    ops.conv_forward(x, w, None, got, *geo)
    cudnn.CudnnOps(fake_cudnn, fake_cudnn.Lib).conv_forward(x, w, None, want, *geo)
    assert _plans_run() == ["tf32_tensor_core"]
    assert fe.STATE["graphs"][0].filters["numeric"] == [fe.numerical_note.NONDETERMINISTIC]
    err = np.abs(got - want).max()
    assert 1e-6 < err < 1e-2


def test_cudnn_tune(frontend_on_cpu):
    """None/'off': the heuristic's first plan. 'fastest': every plan timed once, the quickest
    kept. 'limited_workspace': the same within the op's workspace (MB)."""
    ops = frontend_on_cpu
    x, w, _, gy, geo = _data(GEOMETRIES["2d"], "float32")
    want = np.empty_like(gy)
    cudnn.CudnnOps(fake_cudnn, fake_cudnn.Lib).conv_forward(x, w, None, want, *geo)
    for tune, mb, plan in ((None, 1024, "implicit_gemm"), ("off", 1024, "implicit_gemm"),
                           ("fastest", 1024, "precomputed_gemm"),
                           ("limited_workspace", 1, "implicit_gemm")):
        fe.STATE["executions"].clear()
        y = np.full_like(gy, np.nan)
        ops.conv_forward(x, w, None, y, *geo, tune=tune, workspace_mb=mb)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
        tuned = tune in ("fastest", "limited_workspace")
        if tuned:  # each built plan: one warm-up and three timed runs, then the winner
            built = {"fastest": 2, "limited_workspace": 1}[tune]
            assert len(fe.STATE["executions"]) == 4 * built + 1
        assert fe.STATE["executions"][-1]["plan"] == plan
        graph = fe.STATE["executions"][-1]["graph"]
        assert graph.filters["policy"] == (fe.build_plan_policy.ALL if tuned else
                                           fe.build_plan_policy.HEURISTICS_CHOICE)
        assert graph.filters["workspace"] == (1 << 20 if tune == "limited_workspace" else None)
        fe.STATE["executions"].clear()
        ops.conv_forward(x, w, None, y, *geo, tune=tune, workspace_mb=mb)
        assert _plans_run() == [plan]  # tuned once per graph
    assert ops.builds == 3  # None and 'off' share a graph


def test_cudnn_tune_reaches_the_ops_from_the_symbol(frontend_on_cpu):
    sym = mx.sym.Convolution(V("data"), kernel=(3, 3), num_filter=4, cudnn_tune="fastest",
                             name="c")
    _run(sym, {"data": (2, 3, 7, 7)})
    assert {e["graph"].filters["policy"] for e in fe.STATE["executions"]} == {
        fe.build_plan_policy.ALL}
    assert set(_plans_run()) == {"implicit_gemm", "precomputed_gemm"}


def test_one_handle_set_to_the_stream_before_every_execute(frontend_on_cpu):
    sym, shapes = CASES["grouped_strided_dilated"]()
    _run(sym, shapes)
    assert len(fe.STATE["handles"]) == 1
    assert all(e["handle"] == fe.STATE["handles"][0] and e["stream"] == 0
               for e in fe.STATE["executions"])
    assert all(g.handle == fe.STATE["handles"][0] for g in fe.STATE["graphs"])


def test_the_stand_in_refuses_what_the_frontend_refuses():
    fe.reset()
    handle = fe.create_handle()
    g = fe.pygraph(io_data_type=fe.data_type.FLOAT, compute_data_type=fe.data_type.FLOAT,
                   handle=handle)
    X = g.tensor(name="x", dim=[1, 2, 5, 5], stride=[50, 25, 5, 1])
    W = g.tensor(name="w", dim=[3, 2, 3, 3], stride=[18, 9, 3, 1])
    with pytest.raises(fe.FrontendError, match="output needs its dims"):
        g.conv_dgrad(loss=X, filter=W, padding=[0, 0], stride=[1, 1], dilation=[1, 1])
        g.op[3].set_output(True)
        g.validate()
    g = fe.pygraph(io_data_type=fe.data_type.FLOAT, handle=handle)
    X = g.tensor(name="x", dim=[1, 2, 5, 5], stride=[50, 25, 5, 1])
    W = g.tensor(name="w", dim=[3, 2, 3, 3], stride=[18, 9, 3, 1])
    Y = g.conv_fprop(image=X, weight=W, padding=[1, 1], stride=[1, 1], dilation=[1, 1])
    Y.set_output(True)
    with pytest.raises(fe.FrontendError, match="stage"):
        g.build_operation_graph()  # before validate
    g.validate()
    assert Y.get_dim() == [1, 3, 5, 5]
    g.build_operation_graph()
    g.create_execution_plans([fe.heur_mode.A])
    x, w, y = (np.zeros(t.get_dim(), np.float32) for t in (X, W, Y))
    with pytest.raises(fe.FrontendError, match="before build_plans"):
        g.execute({X: x, W: w, Y: y}, np.zeros(0, np.uint8), handle=handle)
    g.build_plans()
    ws = np.zeros(g.get_workspace_size(), np.uint8)
    with pytest.raises(fe.FrontendError, match="missing"):
        g.execute({X: x, Y: y}, ws, handle=handle)
    with pytest.raises(fe.FrontendError, match="described as"):
        g.execute({X: x, W: w, Y: y[:, :2]}, ws, handle=handle)
    with pytest.raises(fe.FrontendError, match="workspace"):
        g.execute({X: x, W: w, Y: y}, np.zeros(1, np.uint8), handle=handle)
    with pytest.raises(fe.FrontendError, match="was not built"):
        g.execute_plan_at_index({X: x, W: w, Y: y}, ws, index=3, handle=handle)
    g.execute({X: x, W: w, Y: y}, ws, handle=handle)
    g2 = fe.pygraph(io_data_type=fe.data_type.FLOAT, handle=handle)
    X2 = g2.tensor(name="x", dim=[1, 2, 5, 5], stride=[50, 25, 5, 1])
    W2 = g2.tensor(name="w", dim=[3, 2, 3, 3], stride=[18, 9, 3, 1])
    g2.conv_fprop(image=X2, weight=W2, padding=[0, 0], stride=[1, 1],
                  dilation=[1, 1]).set_output(True)
    g2.validate()
    g2.build_operation_graph()
    g2.create_execution_plans([fe.heur_mode.A, fe.heur_mode.FALLBACK])
    g2.deselect_numeric_notes([fe.numerical_note.NONDETERMINISTIC])
    g2.deselect_workspace_greater_than(0)
    with pytest.raises(fe.cudnnGraphNotSupportedError):
        g2.check_support()


def test_cudnn_status_names_the_binding(monkeypatch):
    """CuPy's wrapper where it loads, else the frontend where `import cudnn` works, else why
    neither; MINIMOD_CUDNN=0 turns both off. Also which ops object `cudnn_for` makes."""
    def probe(env="1", gpus=2, **modules):
        monkeypatch.setattr(backend, "_CUDNN_PROBE", [])
        monkeypatch.setattr(backend, "_cupy", object())
        monkeypatch.setattr(backend, "_GPU_COUNT", gpus)
        monkeypatch.setenv("MINIMOD_CUDNN", env)
        for name in ("cupyx", "cupy", "cupy.cuda", "cupy.cuda.cudnn", "cudnn"):
            monkeypatch.setitem(__import__("sys").modules, name, modules.get(name))
        return backend.cudnn_status(), backend.cudnn_library()

    text, lib = probe(cudnn=fe)
    assert text == "cuDNN 9.10.0 through nvidia-cudnn-frontend 1.27.0+fake"
    assert lib == ("frontend", fe) and isinstance(cudnn._ops_for(lib), FrontendOps)
    text, lib = probe()
    assert lib is None and text.startswith("no cuDNN: CuPy's cuDNN wrapper is unavailable")
    assert "nvidia-cudnn-frontend is unavailable" in text and "im2col" in text
    text, lib = probe(env="0", cudnn=fe)
    assert (text, lib) == ("no cuDNN: MINIMOD_CUDNN=0", None)
    text, lib = probe(gpus=0, cudnn=fe)
    assert lib is None and text.startswith("no cuDNN:")
    wrapper = type("M", (), {"cudnn": fake_cudnn})
    lib_mod = type("M", (), {"cudnn": fake_cudnn.Lib})
    text, lib = probe(cupyx=wrapper, cupy=type("M", (), {"cuda": lib_mod}),
                      **{"cupy.cuda": lib_mod, "cupy.cuda.cudnn": fake_cudnn.Lib, "cudnn": fe})
    assert text == "cuDNN via CuPy's wrapper" and lib[0] == "cupy"
    assert isinstance(cudnn._ops_for(lib), cudnn.CudnnOps)
    broken = type("M", (), {"__version__": "1.0", "backend_version": staticmethod(
        lambda: 1 / 0)})
    text, lib = probe(cudnn=broken)
    assert lib is None and "ZeroDivisionError" in text


def test_arrays_off_the_declared_alignment_go_through_scratch(frontend_on_cpu):
    """A planned entry may start anywhere in its block (a split's part): cuDNN reads and
    writes only 16-byte aligned tensors, so such an input or output is copied."""
    ops = frontend_on_cpu
    x, w, _, gy, geo = _data(GEOMETRIES["2d"], "float32")
    want = np.empty_like(gy)
    ops.conv_forward(x, w, None, want, *geo)

    def misaligned(a):
        buf = np.empty(a.size + 1, a.dtype)[1:].reshape(a.shape)  # 4 bytes off
        buf[...] = a
        return buf
    x_off, y_off = misaligned(x), misaligned(np.zeros_like(gy))
    assert x_off.flags.c_contiguous and x_off.__array_interface__["data"][0] % 16
    ops.conv_forward(x_off, w, None, y_off, *geo)
    np.testing.assert_array_equal(y_off, want)
