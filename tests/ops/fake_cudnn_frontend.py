"""A NumPy stand-in for NVIDIA's cuDNN frontend (`import cudnn`, PyPI nvidia-cudnn-frontend),
for CPU tests of minimod.kernels.cudnn_frontend.FrontendOps.

It implements the subset of the frontend's Python API that FrontendOps calls, with the
documented names and keywords (cudnn.pygraph, graph.tensor, conv_fprop / conv_dgrad /
conv_wgrad, validate, build_operation_graph, create_execution_plans, deselect_numeric_notes,
deselect_workspace_greater_than, check_support, build_plans, get_workspace_size,
get_execution_plan_count, get_workspace_size_plan_at_index, execute, execute_plan_at_index,
create_handle, set_stream), and it refuses what the real one refuses where that is known:
steps out of order (executing before build_plans, planning before build_operation_graph), a
variant pack missing a tensor or holding a foreign one, arrays whose shape, dtype or strides
differ from the tensor's description, a too-small workspace, a dgrad or wgrad output without
its dims, inconsistent convolution shapes, a plan index that was not built, an unknown handle.

Each graph gets the same made-up engine list, so that what FrontendOps asks for can be seen in
the numbers: a TF32 tensor-core engine (float32 inputs rounded to TF32's 10-bit mantissa), a
nondeterministic one (results perturbed differently on every run), and two deterministic ones
with small and large workspaces, the small one slower (it sleeps a few milliseconds per run).
The arithmetic is tests/ops/fake_cudnn.py's, written from the definitions. `STATE` records the
handles, the streams set, every graph (with the filters it was given) and every execution.
"""
import enum
import time

import numpy as np

from tests import fake_cuda_graphs as _graphs  # during a capture, an execute is recorded

from . import fake_cudnn

__version__ = "1.27.0+fake"


def backend_version() -> int:
    return 91000


def backend_version_string() -> str:
    return "9.10.0"


class data_type(enum.Enum):
    NOT_SET = 0
    HALF = 1
    FLOAT = 2
    DOUBLE = 3


class heur_mode(enum.Enum):
    A = 0
    B = 1
    FALLBACK = 2


class numerical_note(enum.Enum):
    TENSOR_CORE = 0
    DOWN_CONVERT_INPUTS = 1
    REDUCED_PRECISION_REDUCTION = 2
    FFT = 3
    NONDETERMINISTIC = 4
    WINOGRAD = 5


class build_plan_policy(enum.Enum):
    HEURISTICS_CHOICE = 0
    ALL = 1


class cudnnGraphNotSupportedError(Exception):
    """No engine supports the graph (the real module's exception of that name)."""


class FrontendError(RuntimeError):
    """A programming error the real frontend reports (wrong order, bad variant pack ...)."""


_NUMPY = {data_type.HALF: np.float16, data_type.FLOAT: np.float32, data_type.DOUBLE: np.float64}
N = numerical_note
# (name, numerical notes, workspace bytes, seconds per run), in the heuristic's order
ENGINES = [("tf32_tensor_core", {N.TENSOR_CORE, N.DOWN_CONVERT_INPUTS}, 1 << 20, 0.0),
           ("split_k_atomics", {N.NONDETERMINISTIC}, 0, 0.0),
           ("implicit_gemm", set(), 4096, 0.004),
           ("precomputed_gemm", set(), 64 << 20, 0.0)]
STATE = {"handles": [], "streams": {}, "graphs": [], "executions": []}


def reset() -> None:
    STATE.update(handles=[], streams={}, graphs=[], executions=[])


def create_handle() -> int:
    handle = 0x5000 + len(STATE["handles"])
    STATE["handles"].append(handle)
    return handle


def set_stream(handle, stream) -> None:
    if handle not in STATE["handles"]:
        raise FrontendError("cudnnSetStream failed: unknown handle %r" % (handle,))
    STATE["streams"][handle] = int(stream)


def get_stream(handle) -> int:
    return STATE["streams"].get(handle, 0)


class _Tensor:
    """A graph tensor's description (dims and strides in elements, data type, virtual)."""

    def __init__(self, graph, name, dim, stride, dtype, virtual):
        self._graph, self.name, self.dtype, self.virtual = graph, name, dtype, virtual
        self.dim = None if dim is None else [int(d) for d in dim]
        self.stride = None if stride is None else [int(s) for s in stride]

    def _settable(self):
        if self._graph.stage != "defining":
            raise FrontendError("tensor %r changed after validate()" % self.name)
        return self

    def set_output(self, is_output):
        self._settable().virtual = not is_output
        return self

    def set_data_type(self, dtype):
        self._settable().dtype = dtype
        return self

    def set_dim(self, dim):
        self._settable().dim = [int(d) for d in dim]
        return self

    def set_stride(self, stride):
        self._settable().stride = [int(s) for s in stride]
        return self

    def get_dim(self):
        return list(self.dim or [])

    def get_stride(self):
        return list(self.stride or [])


def _conv_out(size, kernel, pad, stride, dilate):
    return [(i + 2 * p - d * (k - 1) - 1) // s + 1
            for i, k, p, s, d in zip(size, kernel, pad, stride, dilate)]


class pygraph:
    """A graph of one convolution, built and run in the documented order."""

    def __init__(self, name="test_graph", io_data_type=None, intermediate_data_type=None,
                 compute_data_type=None, handle=None):
        self.io, self.compute, self.handle = io_data_type, compute_data_type, handle
        self.stage, self.tensors, self.op = "defining", [], None
        self.filters = {"numeric": [], "workspace": None, "modes": None, "policy": None}
        self.plans, self.supported, self.built, self.candidate = None, [], [], None
        STATE["graphs"].append(self)

    def tensor(self, name="", dim=None, stride=None, data_type=data_type.NOT_SET,
               is_virtual=False):
        if self.stage != "defining" or dim is None or stride is None or len(dim) != len(stride):
            raise FrontendError("graph.tensor needs dim and stride of one length, before "
                                "validate()")
        t = _Tensor(self, name, dim, stride, data_type, is_virtual)
        self.tensors.append(t)
        return t

    def _conv(self, kind, a, b, padding, stride, dilation, compute_data_type, name):
        if self.op is not None or self.stage != "defining":
            raise FrontendError("this stand-in holds one operation per graph")
        if a not in self.tensors or b not in self.tensors:
            raise FrontendError("%s takes tensors of this graph" % kind)
        out = _Tensor(self, name + "::out", None, None, data_type.NOT_SET, True)
        self.tensors.append(out)
        self.op = (kind, a, b, out, [int(p) for p in padding], [int(s) for s in stride],
                   [int(d) for d in dilation], compute_data_type)
        return out

    def conv_fprop(self, image, weight, padding=(), stride=(), dilation=(),
                   compute_data_type=data_type.NOT_SET, name=""):
        return self._conv("fprop", image, weight, padding, stride, dilation, compute_data_type,
                          name)

    def conv_dgrad(self, loss, filter, padding=(), stride=(), dilation=(),
                   compute_data_type=data_type.NOT_SET, name=""):
        return self._conv("dgrad", loss, filter, padding, stride, dilation, compute_data_type,
                          name)

    def conv_wgrad(self, image, loss, padding=(), stride=(), dilation=(),
                   compute_data_type=data_type.NOT_SET, name=""):
        return self._conv("wgrad", image, loss, padding, stride, dilation, compute_data_type,
                          name)

    # ------------------------------------------------------------------ the build steps

    def _step(self, expected, stage):
        if self.stage != expected:
            raise FrontendError("%s called at stage %r (needs %r)" % (stage, self.stage,
                                                                      expected))
        self.stage = stage

    def validate(self):
        if self.op is None:
            raise FrontendError("validate: the graph has no operation")
        kind, a, b, out, pad, stride, dilate, _ = self.op
        if out.virtual:
            raise FrontendError("validate: the operation's output is virtual (set_output)")
        sp = len(a.dim) - 2
        if not (len(b.dim) == sp + 2 and len(pad) == len(stride) == len(dilate) == sp):
            raise FrontendError("validate: dims and convolution parameters disagree")
        if kind == "fprop":
            x, w = a.dim, b.dim
            want = x[:1] + w[:1] + _conv_out(x[2:], w[2:], pad, stride, dilate)
            if out.dim is None:  # inferred, as validate() does for fprop outputs
                out.dim = want
            y, groups_of = out.dim, (x, w)
        else:
            if out.dim is None:
                raise FrontendError("validate: %s output needs its dims set" % kind)
            if kind == "dgrad":
                (dy, w), x = (a.dim, b.dim), out.dim
            else:
                (x, dy), w = (a.dim, b.dim), out.dim
            y, want = dy, x[:1] + w[:1] + _conv_out(x[2:], w[2:], pad, stride, dilate)
            groups_of = (x, w)
        x, w = groups_of
        if y != want or x[1] % w[1] or w[0] % (x[1] // w[1]) or min(want) < 1:
            raise FrontendError("validate: shapes %s, %s, %s do not make a convolution"
                                % (a.dim, b.dim, out.dim))
        for t in self.tensors:
            if t.stride is None:
                t.stride = [int(np.prod(t.dim[i + 1:])) for i in range(len(t.dim))]
            if t.dtype == data_type.NOT_SET:
                t.dtype = self.io
        self._step("defining", "validated")

    def build_operation_graph(self):
        self._step("validated", "operation_graph")

    def create_execution_plans(self, modes):
        if not modes or not all(isinstance(m, heur_mode) for m in modes):
            raise FrontendError("create_execution_plans takes a list of cudnn.heur_mode")
        self._step("operation_graph", "planned")
        self.filters["modes"] = list(modes)
        io = self.tensors[0].dtype
        self.plans = [e for e in ENGINES
                      if not (N.TENSOR_CORE in e[1] and io == data_type.DOUBLE)]

    def deselect_numeric_notes(self, notes):
        self._planning("deselect_numeric_notes")
        self.filters["numeric"] += list(notes)

    def deselect_workspace_greater_than(self, workspace):
        self._planning("deselect_workspace_greater_than")
        self.filters["workspace"] = int(workspace)

    def _planning(self, what):
        if self.stage not in ("planned", "checked"):
            raise FrontendError("%s before create_execution_plans" % what)

    def _allowed(self, plan):
        limit = self.filters["workspace"]
        return (not plan[1] & set(self.filters["numeric"])
                and (limit is None or plan[2] <= limit))

    def check_support(self):
        self._planning("check_support")
        self.supported = [i for i, plan in enumerate(self.plans) if self._allowed(plan)]
        if not self.supported:
            raise cudnnGraphNotSupportedError("no engine left after the filters")
        self.stage = "checked"

    def build_plans(self, policy=build_plan_policy.HEURISTICS_CHOICE):
        self._planning("build_plans")
        self.filters["policy"] = policy
        allowed = [i for i, plan in enumerate(self.plans) if self._allowed(plan)]
        if not allowed:
            raise cudnnGraphNotSupportedError("no engine to build")
        self.built = allowed if policy == build_plan_policy.ALL else allowed[:1]
        self.candidate = self.built[0]
        self.stage = "built"

    def get_execution_plan_count(self):
        if self.plans is None:
            raise FrontendError("get_execution_plan_count before create_execution_plans")
        return len(self.plans)

    def get_workspace_size(self):
        if self.stage != "built":
            raise FrontendError("get_workspace_size before build_plans")
        return self.plans[self.candidate][2]

    def get_workspace_size_plan_at_index(self, index):
        return self.plans[index][2] if index in self.built else 0

    # ------------------------------------------------------------------ running

    def execute(self, variant_pack, workspace, handle=None):
        if self.stage != "built":
            raise FrontendError("execute before build_plans")
        self._run(self.candidate, variant_pack, workspace, handle)

    def execute_plan_at_index(self, variant_pack, workspace=None, index=0, handle=None):
        if self.stage != "built" or index not in self.built:
            raise FrontendError("plan %d was not built" % index)
        self._run(index, variant_pack, workspace, handle)

    def _run(self, index, pack, workspace, handle):
        handle = self.handle if handle is None else handle
        if handle not in STATE["handles"]:
            raise FrontendError("execute: unknown cuDNN handle %r" % (handle,))
        kind, a, b, out = self.op[:4]
        wanted = [t for t in self.tensors if not t.virtual]
        if set(pack) != set(wanted):
            raise FrontendError("variant pack: tensors %s missing, %d foreign"
                                % ([t.name for t in wanted if t not in pack],
                                   len(set(pack) - set(wanted))))
        host = {t: _host(pack[t], t) for t in wanted}
        name, notes, need, cost = self.plans[index]
        if workspace is not None and workspace.size == 0:
            # what frontend 1.32.0 said on an H100 to an empty CuPy workspace, needed or not
            raise ValueError("the workspace buffer must be contiguous; got dim (0,) stride (0,)")
        if need and (workspace is None or workspace.dtype != np.uint8 or workspace.size < need):
            raise FrontendError("workspace of %s bytes for a plan needing %d"
                                % (getattr(workspace, "size", None), need))
        STATE["executions"].append({"graph": self, "plan": name, "index": index,
                                    "handle": handle, "workspace": workspace,
                                    "stream": STATE["streams"].get(handle)})
        if _graphs.capturing():  # launched at each replay
            _graphs.record(lambda: self._compute(kind, host[a], host[b], host[out], notes, cost))
        else:
            self._compute(kind, host[a], host[b], host[out], notes, cost)

    def _compute(self, kind, ina, inb, res, notes, cost):
        pad, stride, dilate = self.op[4:7]
        if N.TENSOR_CORE in notes and ina.dtype == np.float32:
            ina, inb = _tf32(ina), _tf32(inb)
        if kind == "fprop":
            fake_cudnn.convolution_forward(ina, inb, None, res, pad, stride, dilate,
                                           ina.shape[1] // inb.shape[1], auto_tune=False,
                                           tensor_core="never")
        elif kind == "dgrad":
            fake_cudnn.convolution_backward_data(inb, ina, None, res, pad, stride, dilate,
                                                 res.shape[1] // inb.shape[1],
                                                 deterministic=True, auto_tune=False,
                                                 tensor_core="never")
        else:
            fake_cudnn.convolution_backward_filter(ina, inb, res, pad, stride, dilate,
                                                   ina.shape[1] // res.shape[1],
                                                   deterministic=True, auto_tune=False,
                                                   tensor_core="never")
        if N.NONDETERMINISTIC in notes:  # atomics add in another order on every run
            rng = np.random.default_rng(len(STATE["executions"]))
            res += (res * rng.uniform(-1e-6, 1e-6, res.shape)).astype(res.dtype)
        time.sleep(cost)


def _host(arr, t):
    """The array behind a variant-pack entry (the device memory it points at), checked
    against the tensor's description."""
    if not isinstance(arr, np.ndarray):
        raise FrontendError("variant pack entry for %r is not an array" % t.name)
    host = arr.view(np.ndarray)  # a fake CuPy array's memory, as the GPU would read it
    strides = [s // host.itemsize for s in host.strides]
    if (list(host.shape) != t.dim or strides != t.stride
            or host.dtype != _NUMPY[t.dtype]):
        raise FrontendError("variant pack: %r is %s %s strides %s, described as %s %s %s"
                            % (t.name, host.dtype, host.shape, strides, t.dtype, t.dim,
                               t.stride))
    if host.__array_interface__["data"][0] % 16:
        raise FrontendError("variant pack: %r is not 16-byte aligned, as its tensor declares"
                            % t.name)
    return host


def _tf32(arr):
    """float32 values rounded to TF32 (10 mantissa bits), as tensor cores read them."""
    bits = np.ascontiguousarray(arr).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
