"""`mx.rtc`: CUDA kernels written by the user, compiled at run time and launched on NDArrays.

    source = r'''
    extern "C" __global__ void axpy(const float *x, float *y, float alpha) {
        int i = threadIdx.x + blockIdx.x * blockDim.x;
        y[i] += alpha * x[i];
    }'''
    module = mx.rtc.CudaModule(source)
    axpy = module.get_kernel("axpy", "const float *x, float *y, float alpha")
    axpy.launch([x, y, 3.0], mx.gpu(0), (1, 1, 1), (10, 1, 1))

As in MXNet, `CudaModule(source, options, exports)` compiles with NVRTC (here CuPy's
`RawModule`; `options` are NVRTC's flags, `exports` the C++ names, templates included, to look
kernels up by), `get_kernel(name, signature)` declares the kernel's parameters in C syntax, and
`launch(args, ctx, grid_dims, block_dims, shared_mem)` runs it: an NDArray for each pointer
parameter (on `ctx`, of the pointer's element type), a number for each value parameter
(converted to its type). A source that does not compile raises MXNetError with NVRTC's log;
the module compiles once per GPU it is launched on.

The parameter types are MXNet's: float, double, __half, uint8_t, int, int32_t, int8_t, char,
int64_t. MXNet only passes an NDArray's address; minimod also checks its dtype and device
against the declaration, since a mismatch makes the kernel read garbage. mx.rtc needs a GPU and
CuPy: on a machine without them `CudaModule` raises, as MXNet built without CUDA does.
"""
from __future__ import annotations

import numbers
import re
from typing import Sequence

import numpy as np

from . import backend
from .base import MXNetError
from .context import Context
from .ndarray import NDArray

__all__ = ["CudaModule", "CudaKernel", "parse_signature"]

#: the C types a kernel parameter may have, and their NumPy dtypes (MXNet's table)
CPP_TYPES = {"float": np.float32, "double": np.float64, "__half": np.float16,
             "uint8_t": np.uint8, "int": np.int32, "int32_t": np.int32, "int8_t": np.int8,
             "char": np.int8, "int64_t": np.int64}
_PARAM = re.compile(r"^(const\s+)?([A-Za-z_]\w*)\s*(\*)?\s*([A-Za-z_]\w*)?$")


def parse_signature(signature: str) -> list:
    """[(is a pointer, NumPy dtype)] of a kernel's C parameter list ("const float *x, int n")."""
    params = []
    for text in signature.split(","):
        text = " ".join(text.split())
        match = _PARAM.match(text)
        if match is None:
            raise MXNetError("mx.rtc: cannot read the parameter %r of the signature %r; write "
                             "it as '[const] type [*]name'" % (text, signature))
        ctype = match.group(2)
        if ctype not in CPP_TYPES:
            raise MXNetError("mx.rtc: parameter %r has type %r; the types are %s"
                             % (text, ctype, ", ".join(CPP_TYPES)))
        params.append((match.group(3) is not None, np.dtype(CPP_TYPES[ctype])))
    return params


class CudaModule:
    """CUDA source compiled at run time (see the module docstring)."""

    def __init__(self, source: str, options: Sequence[str] = (), exports: Sequence[str] = ()):
        if backend.gpu_count() == 0:
            raise MXNetError("mx.rtc compiles CUDA kernels and needs a GPU: %s"
                             % backend.cupy_status())
        self.source = source
        self.options = (options,) if isinstance(options, str) else tuple(options)
        self.exports = (exports,) if isinstance(exports, str) else tuple(exports)
        self._compiled: dict = {}  # GPU id -> its compiled module
        self.module(backend.current_device(backend.xp_for(Context("gpu", 0))))

    def module(self, device_id: int):
        """The module compiled for GPU `device_id` (compiled on first use)."""
        compiled = self._compiled.get(device_id)
        if compiled is None:
            xp = backend.xp_for(Context("gpu", device_id))
            with backend.device_scope(Context("gpu", device_id)):
                compiled = xp.RawModule(code=self.source, options=self.options,
                                        name_expressions=self.exports or None)
                try:
                    compiled.compile()
                except Exception as err:
                    raise MXNetError("mx.rtc: NVRTC could not compile the source for gpu(%d): "
                                     "%s" % (device_id, err)) from err
            self._compiled[device_id] = compiled
        return compiled

    def get_kernel(self, name: str, signature: str) -> "CudaKernel":
        """Kernel `name` (a name of `exports` for a C++ one) with C parameters `signature`."""
        return CudaKernel(self, name, parse_signature(signature))


class CudaKernel:
    """One kernel of a CudaModule; `launch` runs it."""

    def __init__(self, module: CudaModule, name: str, params: list):
        self.module, self.name, self.params = module, name, params
        self._functions: dict = {}

    def _function(self, device_id: int):
        function = self._functions.get(device_id)
        if function is None:
            try:
                function = self.module.module(device_id).get_function(self.name)
            except Exception as err:
                raise MXNetError("mx.rtc: no kernel %r in the module (a C++ kernel needs its "
                                 "name in exports, or extern \"C\")" % self.name) from err
            self._functions[device_id] = function
        return function

    def _arguments(self, args: Sequence, ctx: Context) -> tuple:
        if len(args) != len(self.params):
            raise MXNetError("CudaKernel(%s) expects %d arguments but got %d"
                             % (self.name, len(self.params), len(args)))
        out = []
        for i, (arg, (pointer, dtype)) in enumerate(zip(args, self.params)):
            if pointer:
                if not isinstance(arg, NDArray):
                    raise MXNetError("CudaKernel(%s): argument %d is a pointer and needs an "
                                     "NDArray, got %s" % (self.name, i, type(arg).__name__))
                if arg.context != ctx or np.dtype(arg.dtype) != dtype:
                    raise MXNetError("CudaKernel(%s): argument %d must be a %s array on %s, "
                                     "got %s on %s" % (self.name, i, dtype.name, ctx,
                                                       np.dtype(arg.dtype).name, arg.context))
                out.append(arg._data)
            else:
                if not isinstance(arg, (numbers.Number, np.generic)) or isinstance(arg, bool):
                    raise MXNetError("CudaKernel(%s): argument %d is a %s value and needs a "
                                     "number, got %s" % (self.name, i, dtype.name,
                                                         type(arg).__name__))
                out.append(dtype.type(arg))
        return tuple(out)

    def launch(self, args: Sequence, ctx: Context, grid_dims: Sequence[int],
               block_dims: Sequence[int], shared_mem: int = 0) -> None:
        """Run the kernel on `ctx` (a GPU) over `grid_dims` blocks of `block_dims` threads
        (three ints each), with `shared_mem` bytes of dynamic shared memory per block."""
        if not isinstance(ctx, Context) or ctx.device_type != "gpu":
            raise MXNetError("CudaKernel(%s): a CUDA kernel can only be launched on a GPU "
                             "context, got %s" % (self.name, ctx))
        for what, dims in (("grid_dims", grid_dims), ("block_dims", block_dims)):
            if len(dims) != 3:
                raise MXNetError("CudaKernel(%s): %s must be 3 integers, got %r"
                                 % (self.name, what, tuple(dims)))
        arguments = self._arguments(args, ctx)
        function = self._function(ctx.device_id)
        with backend.device_scope(ctx):
            function(tuple(int(d) for d in grid_dims), tuple(int(d) for d in block_dims),
                     arguments, shared_mem=int(shared_mem))
