"""Convolution through NVIDIA's cuDNN frontend (PyPI `nvidia-cudnn-frontend`, `import cudnn`).

CuPy 14 removed its cuDNN wrapper; `FrontendOps` makes the same calls as `cudnn.CudnnOps`
(conv_forward, conv_backward_data, conv_backward_filter) through the frontend's Python graph
API instead, and `backend.cudnn_library` picks it where CuPy's wrapper is absent. Each call
describes one single-operation graph, as the frontend's documentation lays the workflow out
(docs.nvidia.com/deeplearning/cudnn/frontend/latest/developer/overview.html):

    graph = cudnn.pygraph(io_data_type=..., intermediate_data_type=..., compute_data_type=...,
                          handle=handle)
    X = graph.tensor(name=..., dim=..., stride=..., data_type=...)      # and W, or DY
    Y = graph.conv_fprop(image=X, weight=W, padding=, stride=, dilation=, compute_data_type=)
        # or conv_dgrad(loss=DY, filter=W, ...), conv_wgrad(image=X, loss=DY, ...)
    Y.set_output(True); Y.set_data_type(...); Y.set_dim(...); Y.set_stride(...)
    graph.validate(); graph.build_operation_graph()
    graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    graph.deselect_numeric_notes([...]); graph.check_support(); graph.build_plans(policy)
    graph.execute({X: x, W: w, Y: y}, workspace, handle=handle)

Conventions are CudnnOps's: every call writes into the array it is given, 1-D data is lifted
to 2-D with a unit height, and a destination that is not C-contiguous (or not 16-byte
aligned, as the tensors declare) is computed into a temporary and copied back. Tensors are
described NCHW (NCDHW), packed: inputs that are not C-contiguous and aligned are first copied
into a scratch array. Groups are implied by the channel counts
(data channels = groups x filter channels), as in cuDNN's graph API. The bias is one broadcast
add after the convolution: a conv + bias graph would need the runtime-fusion engines, which
take NHWC only.

Everything a call needs is made once and kept: one built graph per (operation, device, dtype,
shapes, padding, stride, dilation, tuning) in `_graphs`, one cuDNN handle per device, one
workspace per (device, size) sized by `graph.get_workspace_size()`, and the scratch arrays. A
second call with the same shapes allocates nothing, builds nothing, and only executes, which is
what a CUDA-graph capture of the step needs. Before each execute the handle is set to CuPy's
current stream (`cudnn.set_stream`).

Numerics. Plans whose engines carry the NONDETERMINISTIC numerical note are deselected, so
seeded runs repeat exactly; for float32, so are TENSOR_CORE and DOWN_CONVERT_INPUTS (TF32)
engines unless the environment sets MINIMOD_CUDNN_TF32=1. Float16 may use tensor cores.

Tuning (MXNet's cudnn_tune): None or 'off' runs the heuristic's first supported plan
(build_plans with HEURISTICS_CHOICE). 'fastest' builds every plan (build_plan_policy.ALL), runs
each supported one on the first call's data, and keeps the quickest for that graph;
'limited_workspace' does the same among plans whose workspace fits the op's `workspace` (MB;
`deselect_workspace_greater_than`). Tuning runs once per graph, on its first call, which must
therefore not be inside a CUDA-graph capture.

Pooling: the frontend documents no resampling backward ("to be supported soon") and no Python
resampling at all, so `pools` is False and Pooling keeps its own path on the GPU; the two
pooling methods exist only to say so.

This module was written without a GPU, against a NumPy stand-in for the `cudnn` module
(tests/ops/fake_cudnn_frontend.py), and first ran on an H100 with frontend 1.32.0: the
workspace is never empty because that version refuses an empty one (docs/gpu.md).
"""
from __future__ import annotations

import os
import time

import numpy as np

from .. import backend
from ..ops.helpers import bias_view
from .cudnn import _lift_1d, _lift_conv

__all__ = ["FrontendOps"]

_TUNED = ("limited_workspace", "fastest")


def _packed_strides(shape) -> list:
    """Element strides of a C-contiguous array of `shape`."""
    strides, step = [], 1
    for extent in reversed(tuple(shape)):
        strides.append(step)
        step *= max(int(extent), 1)
    return strides[::-1]


class _Built:
    """One built graph: the frontend graph, its tensors by slot name, the plan index to run
    (None: the plan the heuristic built) and the workspace bytes it needs."""

    __slots__ = ("graph", "tensors", "plan", "workspace_bytes")

    def __init__(self, graph, tensors, plan, workspace_bytes):
        self.graph, self.tensors, self.plan = graph, tensors, plan
        self.workspace_bytes = int(workspace_bytes)


class FrontendOps:
    """Convolution through nvidia-cudnn-frontend's Python graph API, in CudnnOps's conventions.

    `frontend` is the `cudnn` module. `tf32` (default: MINIMOD_CUDNN_TF32=1 in the
    environment) lets float32 convolutions use tensor-core (TF32) engines. The counters
    `builds`, `hits` and `allocations` say how many graphs were built, how many calls reused
    one, and how many arrays (workspaces, scratch) were allocated.
    """

    pools = False  # no pooling backward in the frontend's Python API: Pooling keeps its path
    # the bias is one addition of its own after the convolution, which the op reading the
    # output may make instead (`kernels.reader_bias`)
    bias_apart = True

    def __init__(self, frontend, tf32=None):
        self.cudnn = frontend
        if tf32 is None:
            tf32 = os.environ.get("MINIMOD_CUDNN_TF32", "0") == "1"
        self.tf32 = bool(tf32)
        self._graphs: dict = {}
        self._buffers: dict = {}
        self._handles: dict = {}
        self.builds = self.hits = self.allocations = 0
        self.checked: dict = {}  # dtype name -> whether `serves` found it right
        self.refused: dict = {}  # dtype name -> why not

    def serves(self, ctx, dtype) -> bool:
        """Whether this frontend runs convolution in `dtype` on `ctx` right: checked once per
        dtype (`_self_check`, a few small calls compared with NumPy). Where it does not (no
        engine for the dtype, an API the installed frontend lacks), the op keeps its im2col
        path, and `backend.cudnn_status()` says why."""
        key = str(dtype)
        if key not in self.checked:
            try:
                with backend.device_scope(ctx):
                    _self_check(self, backend.xp_for(ctx), np.dtype(dtype))
                self.checked[key] = True
            except Exception as err:  # noqa: BLE001 - any failure: keep the im2col path
                self.checked[key] = False
                self.refused[key] = "%s: %s" % (type(err).__name__, err)
                backend.note_cudnn("%s convolution fails the frontend's self-check (%s), so "
                                   "it runs im2col + cuBLAS" % (key, self.refused[key]))
        return self.checked[key]

    # ------------------------------------------------------------------ the CudnnOps methods

    def conv_forward(self, x, w, b, y, pad, stride, dilate, groups, tune=None,
                     workspace_mb=None) -> None:
        _check_groups(x.shape[1], w.shape[1], groups)
        geometry = _lift_conv(x.ndim - 2, pad, stride, dilate)
        self._run("fprop", {"x": x, "w": w}, "y", y, geometry, tune, workspace_mb)
        if b is not None:
            y += bias_view(b, y.ndim)

    def conv_backward_data(self, w, gy, gx, pad, stride, dilate, groups, tune=None,
                           workspace_mb=None) -> None:
        _check_groups(gx.shape[1], w.shape[1], groups)
        geometry = _lift_conv(gy.ndim - 2, pad, stride, dilate)
        self._run("dgrad", {"dy": gy, "w": w}, "dx", gx, geometry, tune, workspace_mb)

    def conv_backward_filter(self, x, gy, gw, pad, stride, dilate, groups, tune=None,
                             workspace_mb=None) -> None:
        _check_groups(x.shape[1], gw.shape[1], groups)
        geometry = _lift_conv(x.ndim - 2, pad, stride, dilate)
        self._run("wgrad", {"x": x, "dy": gy}, "dw", gw, geometry, tune, workspace_mb)

    def pool_forward(self, x, y, kernel, stride, pad, mode: str) -> None:
        raise NotImplementedError("nvidia-cudnn-frontend has no pooling in its Python API; "
                                  "Pooling keeps its own path (FrontendOps.pools is False)")

    def pool_backward(self, x, y, gy, gx, kernel, stride, pad, mode: str) -> None:
        raise NotImplementedError("nvidia-cudnn-frontend has no pooling backward in its Python "
                                  "API; Pooling keeps its own path (FrontendOps.pools is False)")

    # ------------------------------------------------------------------ one call

    def _run(self, kind, inputs, out_slot, out, geometry, tune, workspace_mb) -> None:
        device = backend.device_of(out)
        target = out if _in_place(out) else self._scratch(out, device, out_slot)
        arrays = {slot: _lift_1d(self._contiguous(arr, device, slot))
                  for slot, arr in inputs.items()}
        arrays[out_slot] = _lift_1d(target)
        tune = tune if tune in _TUNED else None
        limit = None
        if tune == "limited_workspace" and workspace_mb:
            limit = int(workspace_mb) << 20
        shapes = tuple((slot, arr.shape) for slot, arr in sorted(arrays.items()))
        key = (kind, device, str(out.dtype), shapes, geometry, tune, limit, self.tf32)
        handle = self._handle(device)
        self.cudnn.set_stream(handle=handle, stream=_stream_ptr(out))
        built = self._graphs.get(key)
        if built is None:
            built = self._build(kind, arrays, out_slot, geometry, out.dtype, tune, limit, handle)
            self._graphs[key] = built
            self.builds += 1
        else:
            self.hits += 1
        pack = {built.tensors[slot]: arr for slot, arr in arrays.items()}
        workspace = self._workspace(out, device, built.workspace_bytes)
        if built.plan is None:
            built.graph.execute(pack, workspace, handle=handle)
        else:
            built.graph.execute_plan_at_index(pack, workspace, built.plan, handle=handle)
        if target is not out:
            out[...] = target

    # ------------------------------------------------------------------ building

    def _build(self, kind, arrays, out_slot, geometry, dtype, tune, limit, handle) -> _Built:
        fe = self.cudnn
        io = {"float16": fe.data_type.HALF, "float32": fe.data_type.FLOAT,
              "float64": fe.data_type.DOUBLE}[str(dtype)]
        compute = fe.data_type.DOUBLE if str(dtype) == "float64" else fe.data_type.FLOAT
        graph = fe.pygraph(io_data_type=io, intermediate_data_type=compute,
                           compute_data_type=compute, handle=handle)
        tensors = {slot: graph.tensor(name=slot, dim=list(arr.shape),
                                      stride=_packed_strides(arr.shape), data_type=io)
                   for slot, arr in arrays.items() if slot != out_slot}
        pad, stride, dilate = (list(v) for v in geometry)
        conv = {"padding": pad, "stride": stride, "dilation": dilate,
                "compute_data_type": compute, "name": kind}
        if kind == "fprop":
            result = graph.conv_fprop(image=tensors["x"], weight=tensors["w"], **conv)
        elif kind == "dgrad":
            result = graph.conv_dgrad(loss=tensors["dy"], filter=tensors["w"], **conv)
        else:
            result = graph.conv_wgrad(image=tensors["x"], loss=tensors["dy"], **conv)
        shape = arrays[out_slot].shape
        # one setter per statement: a binding may hand back a copy from a setter
        result.set_output(True)
        result.set_data_type(io)
        result.set_dim(list(shape))
        result.set_stride(_packed_strides(shape))
        tensors[out_slot] = result
        graph.validate()
        graph.build_operation_graph()
        graph.create_execution_plans([fe.heur_mode.A, fe.heur_mode.FALLBACK])
        graph.deselect_numeric_notes(self._excluded_notes(dtype))
        if limit is not None:
            graph.deselect_workspace_greater_than(limit)
        graph.check_support()
        if tune is None:
            graph.build_plans(fe.build_plan_policy.HEURISTICS_CHOICE)
            return _Built(graph, tensors, None, graph.get_workspace_size())
        graph.build_plans(fe.build_plan_policy.ALL)
        return self._autotune(graph, tensors, arrays, out_slot, handle)

    def _excluded_notes(self, dtype) -> list:
        notes = self.cudnn.numerical_note
        excluded = [notes.NONDETERMINISTIC]
        if str(dtype) == "float32" and not self.tf32:
            excluded += [notes.TENSOR_CORE, notes.DOWN_CONVERT_INPUTS]
        return excluded

    def _autotune(self, graph, tensors, arrays, out_slot, handle) -> _Built:
        """Time every plan that build_plans(ALL) built (an unbuilt one refuses to execute) on
        this call's arrays; the quickest is the graph's plan from now on."""
        out = arrays[out_slot]
        count = graph.get_execution_plan_count()
        need = max([graph.get_workspace_size_plan_at_index(i) for i in range(count)] + [0])
        workspace = self._workspace(out, backend.device_of(out), need)
        pack = {tensors[slot]: arr for slot, arr in arrays.items()}
        best, best_time, last_error = None, None, None
        for index in range(count):
            def run(index=index):
                graph.execute_plan_at_index(pack, workspace, index, handle=handle)
            try:
                run()  # warm-up; refused where the plan was deselected or did not build
            except Exception as err:  # the frontend raises its own error types
                last_error = err
                continue
            elapsed = _elapsed(run, out)
            if best_time is None or elapsed < best_time:
                best, best_time = index, elapsed
        if best is None:
            raise RuntimeError("cuDNN frontend: no plan of %d ran (%s)" % (count, last_error))
        return _Built(graph, tensors, best, need)

    # ------------------------------------------------------------------ kept resources

    def _handle(self, device):
        handle = self._handles.get(device)
        if handle is None:  # cuDNN ties a handle to the device current at its creation
            handle = self._handles[device] = self.cudnn.create_handle()
        return handle

    def _buffer(self, key, like, shape, dtype):
        buf = self._buffers.get(key)
        if buf is None:
            buf = self._buffers[key] = backend.array_module_of(like).empty(shape, dtype=dtype)
            self.allocations += 1
        return buf

    def _workspace(self, like, device, nbytes: int):
        # never empty: frontend 1.32 refuses a zero-byte workspace ("the workspace buffer must be
        # contiguous; got dim (0,) stride (0,)", seen on an H100) even for a plan that needs none
        nbytes = max(int(nbytes), _ALIGNMENT)
        return self._buffer(("workspace", device, nbytes), like, (nbytes,), "uint8")

    def _scratch(self, arr, device, slot):
        return self._buffer(("scratch", device, slot, arr.shape, str(arr.dtype)), arr,
                            arr.shape, arr.dtype)

    def _contiguous(self, arr, device, slot):
        if _in_place(arr):
            return arr
        scratch = self._scratch(arr, device, slot)
        scratch[...] = arr
        return scratch


#: the byte alignment the frontend's tensors declare (cuDNN's default for its tensors)
_ALIGNMENT = 16


def _in_place(arr) -> bool:
    """Whether cuDNN may read or write `arr` where it lies: C-contiguous, and aligned as the
    graph's tensors declare (a planned entry may start anywhere in its block, such as a
    split's part)."""
    return arr.flags.c_contiguous and backend.address(arr) % _ALIGNMENT == 0


def _check_groups(channels: int, filter_channels: int, groups: int) -> None:
    if channels != groups * filter_channels:
        raise ValueError("cuDNN's graph API infers groups from the channels: %d data channels "
                         "for %d groups of %d" % (channels, groups, filter_channels))


def _stream_ptr(arr) -> int:
    """CuPy's current stream for a device array (0, the default stream, for host arrays)."""
    if not backend.is_gpu_array(arr):
        return 0
    return int(backend.array_module_of(arr).cuda.get_current_stream().ptr)


def _elapsed(run, arr, repeat: int = 3) -> float:
    """Seconds (or milliseconds, on a GPU: only compared) that `repeat` runs take."""
    if backend.is_gpu_array(arr):
        cuda = backend.array_module_of(arr).cuda
        start, end = cuda.Event(), cuda.Event()
        start.record()
        for _ in range(repeat):
            run()
        end.record()
        end.synchronize()
        return cuda.get_elapsed_time(start, end)
    begin = time.perf_counter()
    for _ in range(repeat):
        run()
    return time.perf_counter() - begin


def _direct_conv(x, w, pad, stride, groups: int):
    """A 2-D convolution by its definition, in float64 NumPy (one product per filter tap)."""
    n, _, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    xp_ = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    ho, wo = (h + 2 * pad[0] - kh) // stride[0] + 1, (wd + 2 * pad[1] - kw) // stride[1] + 1
    y = np.zeros((n, oc, ho, wo))
    og = oc // groups
    for g in range(groups):
        xs, ws = xp_[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i:i + stride[0] * ho:stride[0], j:j + stride[1] * wo:stride[1]]
                y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    return y


def _self_check(ops, xp, dtype) -> None:
    """Run a padded, strided, grouped convolution's forward, data and filter gradients through
    `ops` in `dtype`, and raise unless forward matches the definition and the two gradients
    are its adjoints (<dgrad(dy), x> = <dy, conv(x)> = <wgrad(dy), w>)."""
    rng = np.random.RandomState(7)

    def draw(shape):  # values `dtype` holds exactly, in float64
        return rng.uniform(-1, 1, shape).astype(dtype).astype(np.float64)
    x, w = draw((2, 4, 7, 6)), draw((6, 2, 3, 3))
    geometry = ((1, 1), (2, 1), (1, 1), 2)  # pad, stride, dilate, groups
    want = _direct_conv(x, w, geometry[0], geometry[1], geometry[3])
    dy = draw(want.shape)
    dev = [xp.asarray(a.astype(dtype)) for a in (x, w, dy)]
    y, dx, dw = (xp.empty(shape, dtype=dtype) for shape in (want.shape, x.shape, w.shape))
    ops.conv_forward(dev[0], dev[1], None, y, *geometry)
    ops.conv_backward_data(dev[1], dev[2], dx, *geometry)
    ops.conv_backward_filter(dev[0], dev[2], dw, *geometry)
    y, dx, dw = (backend.asnumpy(a).astype(np.float64) for a in (y, dx, dw))
    tol = 2e-2 if dtype == np.float16 else 1e-4
    inner = float(np.sum(dy * want))
    checks = {"forward": float(np.max(np.abs(y - want))) / max(float(np.max(np.abs(want))), 1),
              "data gradient": abs(float(np.sum(dx * x)) - inner) / max(abs(inner), 1),
              "filter gradient": abs(float(np.sum(dw * w)) - inner) / max(abs(inner), 1)}
    wrong = {k: v for k, v in checks.items() if not v <= tol}
    if wrong:
        raise ValueError("results differ from NumPy's: %s" % ", ".join(
            "%s by %.3g" % item for item in sorted(wrong.items())))
