"""A strict NumPy-backed stand-in for CuPy with two pretend GPUs, for running the GPU test cases
on a machine without one: `MINIMOD_FAKE_CUPY=1 python -m pytest tests/...`.

Its arrays (`ndarray`, a NumPy subclass) remember the device they were made on and refuse
what real CuPy refuses, so the GPU code paths' data movement is checked:
- an operation mixing a device array with a host (NumPy) array, or with a device array of
  another GPU than the current one, raises;
- `dev_array[...] = host_array` raises (CuPy takes host data only through `cupy.asarray` or
  `ndarray.set`);
- kernels run on the current device (`cupy.cuda.Device(i)`), and `ndarray.copy()` makes the
  copy there (a peer copy);
- every read of a device value on the host (`get`, `asnumpy`, `item`, `bool()`, `float()` ...),
  which on a real GPU waits for the queued work, is recorded (`host_reads`).
Arithmetic is NumPy's, so results equal the CPU path's; `cupyx.cudnn` is tests/ops/fake_cudnn.py
and `ElementwiseKernel` evaluates the kernel body with NumPy (backend's emulation), so the
cuDNN variants and fused kernels run too. Streams, CUDA-graph capture (nothing runs while a
stream captures; a launch runs what was recorded) and a column-major cuBLAS GEMM come from
tests/fake_cuda_graphs.py. It does not model asynchrony, NCCL or which NumPy functions CuPy
lacks: a pass here says the device paths move data correctly, not that real CuPy accepts
every call.
"""
import builtins
import sys
import types

import numpy as _np

from tests import fake_cuda_graphs as _graphs

__version__ = "13.0.0+fake"
_STATE = {"device": 0, "count": 2, "host_reads": []}


def host_reads() -> list:
    """What has read device values back to the host since the last `reset_host_reads` (each
    entry names the call: get, item, bool, float, int, index, tolist)."""
    return list(_STATE["host_reads"])


def reset_host_reads() -> None:
    _STATE["host_reads"].clear()


def _host_read(what: str, method: str = ""):
    """ndarray.<method> (default: <what>), recording the host read it makes."""
    host_method = getattr(_np.ndarray, method or what)

    def read(self, *args):
        _STATE["host_reads"].append(what)
        _graphs.refuse("reading a device value on the host (%s)" % what)
        return host_method(self, *args)
    return read


def _on_device(host, device: int):
    """The NumPy array `host` (a fresh copy or a view) as a device array of gpu(`device`)."""
    out = _np.asarray(host).view(ndarray)
    out._dev = device
    return out


class ndarray(_np.ndarray):
    """A device array: a NumPy array plus the id of the pretend GPU holding it."""

    def __array_finalize__(self, obj):
        self._dev = getattr(obj, "_dev", _STATE["device"])

    @property
    def device(self):
        return Device(self._dev)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        _check_operands(inputs + (out or ()), "%s.%s" % (ufunc.__name__, method))
        args = [_host_view(a) for a in inputs]
        if out is not None:
            kwargs["out"] = tuple(_host_view(o) for o in out)
        if _graphs.capturing():
            return _captured_ufunc(ufunc, method, args, kwargs, out)
        result = getattr(ufunc, method)(*args, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func, types_, args, kwargs):
        return _call(func, args, kwargs)

    def __setitem__(self, key, value):
        _check_operands((self, value), "__setitem__")
        _check_devices(key, "__setitem__")
        target, key, value = self.view(_np.ndarray), _host_view(key), _host_view(value)
        if _graphs.capturing():
            _graphs.record(lambda: _np.ndarray.__setitem__(target, key, value))
            return
        _np.ndarray.__setitem__(target, key, value)

    def __getitem__(self, key):
        _check_devices(key, "__getitem__")
        try:
            out = _np.ndarray.__getitem__(self, _host_view(key))
        except IndexError:
            if not _graphs.capturing():
                raise
            # integer indices computed earlier in the capture hold garbage until a launch
            # fills them; the result's shape does not depend on their values
            out = _np.ndarray.__getitem__(self, _graphs.zero_indices(_host_view(key)))
        if isinstance(out, _np.generic):  # an element stays on the device, as a 0-d array
            out = _on_device(out, self._dev)
        if _graphs.capturing():
            host, hkey = self.view(_np.ndarray), _host_view(key)
            _graphs.fresh(out.view(_np.ndarray), lambda: host[hkey], (host,), "getitem")
        return out

    def __array__(self, dtype=None, copy=None):
        raise TypeError("implicit conversion of a (fake) CuPy array to NumPy: use .get() or "
                        "cupy.asnumpy()")

    def copy(self, order="C"):
        # CuPy copies onto the current device (a peer copy when the source lives elsewhere)
        host = self.view(_np.ndarray)
        out = _on_device(_np.ndarray.copy(host, order=order), _STATE["device"])
        if _graphs.capturing():
            _graphs.fresh(out.view(_np.ndarray), lambda: host, (host,), "copy")
        return out

    # methods NumPy runs in C without asking __array_ufunc__/__array_function__: made here
    # so that a capture records them
    def astype(self, dtype, *args, **kwargs):
        return self._method("astype", dtype, *args, **kwargs)

    def ravel(self, *args, **kwargs):
        return self._method("ravel", *args, **kwargs)

    def flatten(self, *args, **kwargs):
        return self._method("flatten", *args, **kwargs)

    def reshape(self, *args, **kwargs):
        return self._method("reshape", *args, **kwargs)

    def dot(self, other, out=None):
        return sys.modules[__name__].dot(self, other, **({} if out is None else {"out": out}))

    def fill(self, value):
        if _graphs.capturing():
            host = self.view(_np.ndarray)
            _graphs.record(lambda: host.fill(value))
            return
        _np.ndarray.fill(self, value)

    def min(self, axis=None, out=None, keepdims=False):
        if out is not None:  # as CuPy 14.2, whose CUB path fails on ndarray.min(out=...)
            raise TypeError("operand type(s) all returned NotImplemented from __array_ufunc__"
                            " (the stand-in plays CuPy 14.2's ndarray.min(out=...) failure)")
        return _np.minimum.reduce(self, axis=axis, keepdims=keepdims)

    def _method(self, name, *args, **kwargs):
        out = getattr(_np.ndarray, name)(self, *args, **kwargs)
        if _graphs.capturing() and isinstance(out, ndarray):
            host = self.view(_np.ndarray)
            _graphs.fresh(out.view(_np.ndarray),
                          lambda: getattr(_np.ndarray, name)(host, *args, **kwargs), (host,),
                          name)
        return out

    def get(self):
        _STATE["host_reads"].append("get %s" % (self.shape,))
        _graphs.refuse("copying device data to the host")
        return _np.ndarray.copy(self.view(_np.ndarray))

    # reading a device value on the host waits for the GPU: each such call is recorded
    item = _host_read("item")
    tolist = _host_read("tolist")
    __bool__ = _host_read("bool", "__bool__")
    __float__ = _host_read("float", "__float__")
    __int__ = _host_read("int", "__int__")
    __index__ = _host_read("index", "__index__")

    def set(self, arr):
        if isinstance(arr, ndarray):
            raise TypeError("ndarray.set takes host data")
        _graphs.refuse("copying host data to the device")
        self.view(_np.ndarray)[...] = arr


def _is_host_array(value) -> bool:
    return isinstance(value, _np.ndarray) and not isinstance(value, ndarray)


def _check_operands(values, what: str) -> None:
    for value in values:
        if isinstance(value, (list, tuple)):
            _check_operands(value, what)
        elif _is_host_array(value):
            raise TypeError("%s mixes a host NumPy array %s into a device operation"
                            % (what, value.shape))
        elif isinstance(value, ndarray) and value._dev != _STATE["device"]:
            raise ValueError("%s reads an array of gpu(%d) while gpu(%d) is current"
                             % (what, value._dev, _STATE["device"]))


def _check_devices(key, what: str) -> None:
    """Index arrays may come from the host (CuPy copies them over); device ones must be here."""
    for part in key if isinstance(key, tuple) else (key,):
        if isinstance(part, ndarray) and part._dev != _STATE["device"]:
            raise ValueError("%s indexes with an array of gpu(%d) while gpu(%d) is current"
                             % (what, part._dev, _STATE["device"]))


def _host_view(value):
    if isinstance(value, ndarray):
        return value.view(_np.ndarray)
    if isinstance(value, tuple):
        return tuple(_host_view(v) for v in value)
    if isinstance(value, list):
        return [_host_view(v) for v in value]
    return value


def _wrap(result):
    # CuPy's reductions give 0-d device arrays where NumPy gives scalars
    if isinstance(result, _np.generic) or _is_host_array(result):
        return _on_device(result, _STATE["device"])
    if isinstance(result, tuple):
        return tuple(_wrap(r) for r in result)
    if isinstance(result, list):
        return [_wrap(r) for r in result]
    return result


_METADATA = {"shape", "ndim", "size", "result_type", "can_cast", "isscalar", "iscomplexobj",
             "isrealobj"}  # read no element: any device will do, as in CuPy


_MUTATING = {"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis"}


def _call(func, args, kwargs):
    name = getattr(func, "__name__", "call")
    if name in _METADATA:
        return func(*_host_view(tuple(args)), **kwargs)
    _check_operands(tuple(args) + tuple(kwargs.values()), name)
    hargs, hkwargs = _host_view(tuple(args)), {k: _host_view(v) for k, v in kwargs.items()}
    if _graphs.capturing():
        if hkwargs.get("out") is not None or name in _MUTATING:
            _graphs.record(lambda: func(*hargs, **hkwargs))
            return kwargs.get("out")
        with _np.errstate(all="ignore"):
            result = _wrap(func(*hargs, **hkwargs))
        if isinstance(result, ndarray):
            _graphs.fresh(result.view(_np.ndarray), lambda: func(*hargs, **hkwargs),
                          _arrays_in(hargs, hkwargs), name)
        return result
    return _wrap(func(*hargs, **hkwargs))


def _arrays_in(args, kwargs) -> list:
    found = []
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, (list, tuple)):
            found.extend(_arrays_in(value, {}))
        elif isinstance(value, _np.ndarray):
            found.append(value)
    return found


def _captured_ufunc(ufunc, method, args, kwargs, out):
    """A ufunc call during capture: recorded (writing an existing array) or a graph
    temporary (see fake_cuda_graphs.fresh)."""
    def run():
        return getattr(ufunc, method)(*args, **kwargs)
    if out is not None or method == "at":
        _graphs.record(run)
        return None if out is None else out[0] if len(out) == 1 else out
    with _np.errstate(all="ignore"):
        result = run()
    if isinstance(result, tuple):
        raise NotImplementedError("the stand-in cannot capture %s, which returns several "
                                  "arrays" % ufunc.__name__)
    result = _wrap(result)
    _graphs.fresh(result.view(_np.ndarray), run, _arrays_in(args, {}), ufunc.__name__)
    return result


def _device_fn(func):
    def run(*args, **kwargs):
        return _call(func, args, kwargs)
    run.__name__ = getattr(func, "__name__", "fn")
    return run


def _from_host(func):
    """A creation function: host data (or none) in, a device array out."""
    def run(*args, **kwargs):
        if builtins.any(isinstance(a, ndarray) for a in args):
            return _call(func, args, kwargs)
        if _graphs.capturing():
            if func.__name__ in ("array", "asarray", "ascontiguousarray"):
                _graphs.refuse("copying host data to the device (cupy.%s)" % func.__name__)
            result = _wrap(func(*args, **kwargs))
            _graphs.fresh(result.view(_np.ndarray), lambda: func(*args, **kwargs), (),
                          func.__name__)
            return result
        return _wrap(func(*args, **kwargs))
    return run


def asnumpy(arr, *args, **kwargs):
    return arr.get() if isinstance(arr, ndarray) else _np.asarray(arr)


class Device:
    def __init__(self, device_id=None):
        self.id = _STATE["device"] if device_id is None else int(device_id)
        self._saved = []

    def __enter__(self):
        if not 0 <= self.id < _STATE["count"]:
            raise RuntimeError("no such device %d" % self.id)
        self._saved.append(_STATE["device"])
        _STATE["device"] = self.id
        return self

    def __exit__(self, *exc):
        _STATE["device"] = self._saved.pop()

    def synchronize(self):
        _graphs.refuse("synchronising the device")

    @property
    def compute_capability(self):
        return "90"  # CuPy's form: the sm_ number as a string (the stand-in plays an H100)


class _Runtime:
    @staticmethod
    def getDeviceCount():
        return _STATE["count"]

    @staticmethod
    def getDevice():
        return _STATE["device"]

    @staticmethod
    def deviceSynchronize():
        _graphs.refuse("synchronising the device")

    @staticmethod
    def deviceCanAccessPeer(a, b):
        return 1

    @staticmethod
    def getDeviceProperties(i):
        return {"name": b"Fake GPU %d" % i}


class _Pool:
    def free_all_blocks(self):
        pass


def get_default_memory_pool():
    return _Pool()


class ElementwiseKernel:
    """Evaluates the kernel body with NumPy (minimod.backend's emulation of its bodies)."""

    def __init__(self, in_params, out_params, body, name="kernel"):
        from minimod import backend
        spec = object.__new__(backend.ElementwiseSpec)  # not registered
        spec.name, spec.in_params, spec.out_params, spec.body = name, in_params, out_params, body
        self._kernel = backend._EmulatedKernel(spec)

    def __call__(self, *args):
        _check_operands(args, self._kernel.spec.name)
        hosts = [_host_view(a) for a in args]
        if _graphs.capturing():
            _graphs.record(lambda: self._kernel(*hosts))
            return
        self._kernel(*hosts)


class _RandomState:
    def __init__(self, seed=None):
        self._rs = _np.random.RandomState(seed)

    def __getattr__(self, name):
        return _from_host(getattr(self._rs, name))


_CREATE = ("empty", "zeros", "ones", "full", "arange", "array", "asarray", "ascontiguousarray",
           "empty_like", "zeros_like", "ones_like", "full_like", "eye", "identity", "linspace")


def _build():
    me = sys.modules[__name__]
    for name in dir(_np):
        if name.startswith("_") or hasattr(me, name):
            continue
        value = getattr(_np, name)
        if name in _CREATE:
            setattr(me, name, _from_host(value))
        elif isinstance(value, _np.ufunc):
            setattr(me, name, value)  # dispatches through ndarray.__array_ufunc__
        elif callable(value) and not isinstance(value, type):
            setattr(me, name, _device_fn(value))
        elif not isinstance(value, types.ModuleType):
            setattr(me, name, value)  # dtypes, constants
    for name in _CUBLAS_CALLS:  # CuPy's cuBLAS wrapper refuses every call under capture
        setattr(me, name, _refused_in_capture(getattr(me, name), name))
    for name in ("concatenate", "stack"):
        setattr(me, name, _joining(getattr(me, name), name))
    me.cumsum = _cumsum(me.cumsum)
    me.random = types.SimpleNamespace(RandomState=_RandomState)
    me.RawModule = _graphs.RawModule
    me.linalg = types.SimpleNamespace(**{  # cupy.linalg: the NumPy names, on device arrays
        name: _device_fn(getattr(_np.linalg, name)) for name in dir(_np.linalg)
        if not name.startswith("_") and callable(getattr(_np.linalg, name))
        and not isinstance(getattr(_np.linalg, name), type)})
    me.lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(
        as_strided=_as_strided))
    cuda = types.ModuleType("cupy.cuda")
    cuda.Device = Device
    cuda.runtime = _Runtime
    cuda.Stream = _graphs.Stream
    cuda.MemoryPool = _graphs.MemoryPool
    cuda.using_allocator = _graphs.using_allocator
    cuda.get_current_stream = _graphs.get_current_stream
    cuda.minimod_stand_in_blas = _graphs.Blas()
    me.cuda = cuda
    me.__name__ = "cupy"
    return me


#: functions CuPy runs through its cuBLAS wrapper (einsum and tensordot may)
_CUBLAS_CALLS = ("matmul", "dot", "tensordot", "einsum", "inner", "vdot")


def _refused_in_capture(func, name):
    def run(*args, **kwargs):
        if _graphs.capturing():
            raise RuntimeError("cupy.%s: calling cuBLAS API during stream capture is "
                               "currently unsupported" % name)
        return func(*args, **kwargs)
    run.__name__ = name
    return run


def _joining(func, name):
    """CuPy joins more than eight arrays with one kernel that reads their addresses from a
    table it copies to the device on every call: a host-to-device copy, which a capture
    refuses."""
    def run(arrays, *args, **kwargs):
        if _graphs.capturing() and len(arrays) > 8:
            _graphs.refuse("copying host data to the device (cupy.%s's table of %d arrays)"
                           % (name, len(arrays)))
        return func(arrays, *args, **kwargs)
    run.__name__ = name
    return run


def _cumsum(func):
    """CuPy's cumsum with axis=None and an `out` copies the input into `out` before
    flattening it: a multi-dimensional input fails to broadcast into the flat `out`."""
    def run(a, axis=None, dtype=None, out=None):
        if axis is None and out is not None and a.ndim > 1:
            raise ValueError("operands could not be broadcast together with shapes %s %s"
                             % (a.shape, out.shape))
        return func(a, axis=axis, dtype=dtype, out=out)
    run.__name__ = "cumsum"
    return run


def _as_strided(x, shape=None, strides=None, **kwargs):
    return _on_device(_np.lib.stride_tricks.as_strided(x.view(_np.ndarray), shape=shape,
                                                       strides=strides, **kwargs), x._dev)


def scatter_add(target, indices, values):
    _check_operands((target, indices, values), "scatter_add")
    args = (target.view(_np.ndarray), _host_view(indices), _host_view(values))
    if _graphs.capturing():
        _graphs.record(lambda: _np.add.at(*args))
        return
    _np.add.at(*args)


def install() -> None:
    """Make `import cupy`, `cupyx` and `cupyx.cudnn` give the stand-ins (before minimod loads).

    With MINIMOD_FAKE_CUDNN=frontend in the environment, CuPy's cuDNN wrapper is absent instead
    (as in CuPy 14) and `import cudnn` gives the stand-in for nvidia-cudnn-frontend
    (tests/ops/fake_cudnn_frontend.py)."""
    import os
    me = _build()
    if os.environ.get("MINIMOD_FAKE_CUDNN") == "frontend":
        from tests.ops import fake_cudnn_frontend
        cupyx = types.ModuleType("cupyx")
        cupyx.scatter_add = scatter_add
        sys.modules.update({"cupy": me, "cupy.cuda": me.cuda, "cupyx": cupyx,
                            "cudnn": fake_cudnn_frontend})
        return
    from tests.ops import fake_cudnn
    cudnn = types.ModuleType("cupyx.cudnn")
    for name in ("convolution_forward", "convolution_backward_data",
                 "convolution_backward_filter", "pooling_forward"):
        setattr(cudnn, name, _unwrapped(getattr(fake_cudnn, name)))
    convolve, add_bias = cudnn.convolution_forward, _unwrapped(fake_cudnn.add_tensor)

    def convolution_forward(x, W, b, y, *args, **kwargs):
        """The wrapper's two cuDNN calls when given a bias: the convolution, then
        addTensor (two kernels on a GPU, two operations in a captured graph here)."""
        convolve(x, W, None, y, *args, **kwargs)
        if b is not None:
            add_bias(b, y)
    cudnn.convolution_forward = convolution_forward
    cudnn.pooling_backward = lambda *a, **k: _wrap(_unwrapped(fake_cudnn.pooling_backward)(
        *a, **k))
    lib = types.ModuleType("cupy.cuda.cudnn")
    for name in dir(fake_cudnn.Lib):
        if name.startswith("CUDNN_"):
            setattr(lib, name, getattr(fake_cudnn.Lib, name))
    me.cuda.cudnn = lib
    cupyx = types.ModuleType("cupyx")
    cupyx.scatter_add = scatter_add
    cupyx.cudnn = cudnn
    sys.modules.update({"cupy": me, "cupy.cuda": me.cuda, "cupy.cuda.cudnn": lib,
                        "cupyx": cupyx, "cupyx.cudnn": cudnn})


def _unwrapped(func):
    """A library call writing into the arrays it is given (recorded during capture), or, for
    pooling_backward, returning a new array (a graph temporary during capture)."""
    def run(*args, **kwargs):
        _check_operands(args, func.__name__)
        hosts = _host_view(args)
        if _graphs.capturing():
            if func.__name__ == "pooling_backward":
                result = func(*hosts, **kwargs)
                return _graphs.fresh(result, lambda: func(*hosts, **kwargs), hosts,
                                     func.__name__)
            _graphs.record(lambda: func(*hosts, **kwargs))
            return None
        return func(*hosts, **kwargs)
    return run
