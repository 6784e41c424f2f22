"""Checks for operators and symbols, usable by users for their own graphs.

- `check_symbolic_forward(sym, location, expected)`: outputs equal `expected`.
- `check_symbolic_backward(sym, location, out_grads, expected)`: gradients equal `expected`.
- `check_numeric_gradient(sym, location)`: gradients equal central differences of
  sum(output * random projection), computed in float64 by default.
- `check_consistency(sym, ctx_list)`: the same symbol gives the same outputs and gradients on
  every context/dtype in the list.

- `count_allocations()`: a context manager listing the size of every array buffer NumPy
  allocates inside it (the tool behind the "a planned step allocates nothing" tests).

`location` is a dict name -> array or a list in `list_arguments()` order; arrays may be NumPy
arrays or NDArrays.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np

from .base import MXNetError
from .context import Context, cpu, current_context
from .ndarray.ndarray import NDArray
from .ndarray.ndarray import array as nd_array

__all__ = ["check_numeric_gradient", "check_symbolic_forward", "check_symbolic_backward",
           "check_consistency", "assert_almost_equal", "almost_equal", "same",
           "default_context", "set_default_context", "rand_shape_nd", "rand_ndarray",
           "numeric_grad", "count_allocations"]

_DEFAULT_CTX = [None]


def default_context() -> Context:
    return _DEFAULT_CTX[0] or current_context()


def set_default_context(ctx: Context) -> None:
    _DEFAULT_CTX[0] = ctx


def _np(value) -> np.ndarray:
    return value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)


def same(a, b) -> bool:
    return np.array_equal(_np(a), _np(b))


def almost_equal(a, b, rtol=1e-5, atol=1e-20, equal_nan=False) -> bool:
    return np.allclose(_np(a), _np(b), rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal(a, b, rtol=1e-5, atol=1e-20, names=("a", "b"), equal_nan=False):
    a, b = _np(a), _np(b)
    if a.shape != b.shape:
        raise AssertionError("%s has shape %s but %s has %s" % (names[0], a.shape, names[1],
                                                               b.shape))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan,
                               err_msg="%s vs %s" % names)


def rand_shape_nd(num_dim: int, dim: int = 10) -> tuple:
    return tuple(np.random.randint(1, dim + 1, size=num_dim))


def rand_ndarray(shape, stype="default", density=None, dtype=None, ctx=None) -> NDArray:
    return nd_array(np.random.uniform(-1, 1, size=shape), ctx=ctx, dtype=dtype)


def _location_dict(sym, location) -> dict:
    names = sym.list_arguments()
    if isinstance(location, Mapping):
        unknown = [k for k in location if k not in names]
        if unknown:
            raise MXNetError("location names %s, which are not arguments of the symbol (%s)"
                             % (unknown, ", ".join(names)))
        return {k: _np(v) for k, v in location.items()}
    location = list(location)
    if len(location) != len(names):
        raise MXNetError("location has %d arrays for %d arguments (%s)"
                         % (len(location), len(names), ", ".join(names)))
    return {k: _np(v) for k, v in zip(names, location)}


def _aux_dict(sym, aux_states) -> dict:
    if aux_states is None:
        return {}
    names = sym.list_auxiliary_states()
    if isinstance(aux_states, Mapping):
        return {k: _np(v) for k, v in aux_states.items()}
    return {k: _np(v) for k, v in zip(names, aux_states)}


def _bind(sym, ctx, location: dict, aux: dict, grad_req, dtype):
    shapes = {k: v.shape for k, v in location.items()}
    types = {k: dtype or v.dtype for k, v in location.items()}
    exe = sym.simple_bind(ctx, grad_req=grad_req, type_dict=types, **shapes)
    for name, value in location.items():
        exe.arg_dict[name][:] = value.astype(exe.arg_dict[name].dtype)
    for name, value in aux.items():
        exe.aux_dict[name][:] = value.astype(exe.aux_dict[name].dtype)
    return exe


def check_symbolic_forward(sym, location, expected, rtol=1e-4, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=np.float32, is_train=False):
    """Assert that the outputs of `sym` at `location` equal `expected` (list or dict)."""
    ctx = ctx or default_context()
    loc = _location_dict(sym, location)
    exe = _bind(sym, ctx, loc, _aux_dict(sym, aux_states), "null", dtype)
    outputs = [o.asnumpy() for o in exe.forward(is_train=is_train)]
    if isinstance(expected, Mapping):
        expected = [expected[name] for name in sym.list_outputs()]
    for name, got, want in zip(sym.list_outputs(), outputs, expected):
        assert_almost_equal(got, _np(want), rtol=rtol, atol=atol or 1e-20,
                            names=("forward " + name, "expected"), equal_nan=equal_nan)
    return outputs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=1e-5, atol=None,
                            aux_states=None, grad_req="write", ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=np.float32):
    """Assert that the gradients of `sym` at `location` for `out_grads` equal `expected`."""
    ctx = ctx or default_context()
    loc = _location_dict(sym, location)
    names = sym.list_arguments()
    if isinstance(expected, Mapping):
        wanted = dict(expected)
    else:
        wanted = dict(zip(names, expected))
    if isinstance(grad_req, str):
        reqs = {n: (grad_req if n in wanted else "null") for n in names}
    else:
        reqs = dict(grad_req)
    exe = _bind(sym, ctx, loc, _aux_dict(sym, aux_states), reqs, dtype)
    initial = {}
    for name, req in reqs.items():
        if req == "add":
            initial[name] = np.random.normal(size=loc[name].shape).astype(
                exe.grad_dict[name].dtype)
            exe.grad_dict[name][:] = initial[name]
    exe.forward(is_train=True)
    if out_grads is not None:
        if isinstance(out_grads, Mapping):
            out_grads = [out_grads[n] for n in sym.list_outputs()]
        out_grads = [nd_array(_np(g), ctx=ctx, dtype=exe.outputs[i].dtype)
                     for i, g in enumerate(out_grads)]
    exe.backward(out_grads)
    result = {}
    for name, want in wanted.items():
        got = exe.grad_dict[name].asnumpy()
        result[name] = got
        want = _np(want)
        if reqs[name] == "add":
            want = want + initial[name]
        assert_almost_equal(got, want, rtol=rtol, atol=atol or 1e-20,
                            names=("gradient of " + name, "expected"), equal_nan=equal_nan)
    return result


def numeric_grad(executor, location: dict, aux: dict, eps: float = 1e-4,
                 use_forward_train: bool = True, projections=None) -> dict:
    """Central differences of sum(output * projection) for every argument in `location`."""
    def objective() -> float:
        for name, value in aux.items():
            executor.aux_dict[name][:] = value
        outs = executor.forward(is_train=use_forward_train)
        return float(sum(np.sum(o.asnumpy().astype(np.float64) * p)
                         for o, p in zip(outs, projections)))
    grads = {}
    for name, value in location.items():
        flat = value.astype(np.float64).reshape(-1)
        grad = np.zeros(flat.size)
        for k in range(flat.size):
            old = flat[k]
            flat[k] = old + eps
            executor.arg_dict[name][:] = flat.reshape(value.shape)
            plus = objective()
            flat[k] = old - eps
            executor.arg_dict[name][:] = flat.reshape(value.shape)
            minus = objective()
            flat[k] = old
            grad[k] = (plus - minus) / (2 * eps)
        executor.arg_dict[name][:] = value
        grads[name] = grad.reshape(value.shape)
    return grads


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=1e-4, rtol=1e-2,
                           atol=None, grad_nodes: Optional[Sequence[str]] = None,
                           use_forward_train: bool = True, ctx=None, grad_stype_dict=None,
                           dtype=np.float64):
    """Assert that symbolic gradients match central differences (float64 by default)."""
    ctx = ctx or default_context()
    loc = _location_dict(sym, location)
    aux = _aux_dict(sym, aux_states)
    grad_nodes = list(grad_nodes) if grad_nodes is not None else list(loc)
    reqs = {n: ("write" if n in grad_nodes else "null") for n in sym.list_arguments()}
    exe = _bind(sym, ctx, loc, aux, reqs, dtype)
    outs = exe.forward(is_train=use_forward_train)
    rng = np.random.RandomState(1234)
    projections = [rng.normal(0, 1, size=o.shape) for o in outs]
    exe.backward([nd_array(p, ctx=ctx, dtype=o.dtype) for p, o in zip(projections, outs)])
    symbolic = {n: exe.grad_dict[n].asnumpy().astype(np.float64) for n in grad_nodes}
    numeric_loc = {n: loc[n] for n in grad_nodes}
    num_exe = _bind(sym, ctx, loc, aux, "null", dtype)
    numeric = numeric_grad(num_exe, numeric_loc, aux, numeric_eps, use_forward_train,
                           projections)
    for name in grad_nodes:
        assert_almost_equal(symbolic[name], numeric[name], rtol=rtol, atol=atol or 1e-6,
                            names=("symbolic gradient of " + name, "numeric gradient"))


def check_consistency(sym, ctx_list: Sequence[dict], scale: float = 1.0, grad_req="write",
                      arg_params=None, aux_params=None, tol=None, raise_on_err=True,
                      ground_truth=None, equal_nan=False, use_uniform=False, rand_type=np.float64):
    """Run `sym` under every {'ctx': ..., 'type_dict': ..., shapes...} entry and compare.

    The first entry (or the float64 one, if any) is the reference. Returns the outputs per entry.
    """
    tol = tol or {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3,
                  np.dtype(np.float64): 1e-5}
    if not ctx_list:
        raise MXNetError("check_consistency needs at least one context entry")
    arg_names = sym.list_arguments()
    first = dict(ctx_list[0])
    shapes = {k: v for k, v in first.items() if k not in ("ctx", "type_dict")}
    ref_exe = sym.simple_bind(first.get("ctx", cpu()), **shapes)
    rng = np.random.RandomState(0)
    arg_params = dict(arg_params or {})
    for name in arg_names:
        if name not in arg_params:
            shape = ref_exe.arg_dict[name].shape
            arg_params[name] = (rng.uniform(-scale, scale, shape) if use_uniform
                                else rng.normal(0, scale, shape))
    aux_params = dict(aux_params or {})
    for name in sym.list_auxiliary_states():
        aux_params.setdefault(name, np.zeros(ref_exe.aux_dict[name].shape))
    results = []
    for entry in ctx_list:
        entry = dict(entry)
        ctx = entry.pop("ctx", cpu())
        types = entry.pop("type_dict", {})
        exe = sym.simple_bind(ctx, grad_req=grad_req, type_dict=types, **entry)
        for name in arg_names:
            exe.arg_dict[name][:] = np.asarray(arg_params[name]).astype(exe.arg_dict[name].dtype)
        for name in sym.list_auxiliary_states():
            exe.aux_dict[name][:] = np.asarray(aux_params[name]).astype(exe.aux_dict[name].dtype)
        outs = [o.asnumpy() for o in exe.forward(is_train=grad_req != "null")]
        grads = {}
        if grad_req != "null":
            exe.backward([nd_array(np.ones(o.shape), ctx=ctx, dtype=o.dtype) for o in outs])
            grads = {n: g.asnumpy() for n, g in exe.grad_dict.items() if g is not None}
        results.append((np.dtype(exe.outputs[0].dtype), outs, grads))
    ref_index = next((i for i, r in enumerate(results) if r[0] == np.float64), 0)
    ref_dtype, ref_outs, ref_grads = results[ref_index]
    for dtype, outs, grads in results:
        t = tol[dtype] if isinstance(tol, dict) else tol
        try:
            for got, want in zip(outs, ref_outs):
                assert_almost_equal(got, want, rtol=t, atol=t, equal_nan=equal_nan)
            for name, got in grads.items():
                assert_almost_equal(got, ref_grads[name], rtol=t, atol=t, equal_nan=equal_nan)
        except AssertionError:
            if raise_on_err:
                raise
    return [r[1] for r in results]


# ------------------------------------------------------------------------ allocation counting
#
# NumPy (>= 1.22) lets a program replace the allocator of array buffers with a "handler": a
# capsule holding a struct of C function pointers (PyDataMem_SetHandler, slot 304 of NumPy's C
# API table). The handler below forwards to the C library's malloc family and records each
# request's size; NumPy remembers per array which handler made it, so arrays made before or
# after the `with` block are freed by the allocator that made them. Only buffers of arrays are
# seen: a ufunc's internal iteration buffers and Python objects are not array allocations.

_ALLOC_STATE: dict = {}


def _alloc_handler():
    if _ALLOC_STATE:
        return _ALLOC_STATE
    import ctypes

    c_void_p, c_size_t = ctypes.c_void_p, ctypes.c_size_t
    malloc_t = ctypes.CFUNCTYPE(c_void_p, c_void_p, c_size_t)
    calloc_t = ctypes.CFUNCTYPE(c_void_p, c_void_p, c_size_t, c_size_t)
    realloc_t = ctypes.CFUNCTYPE(c_void_p, c_void_p, c_void_p, c_size_t)
    free_t = ctypes.CFUNCTYPE(None, c_void_p, c_void_p, c_size_t)

    class Allocator(ctypes.Structure):
        _fields_ = [("ctx", c_void_p), ("malloc", malloc_t), ("calloc", calloc_t),
                    ("realloc", realloc_t), ("free", free_t)]

    class Handler(ctypes.Structure):
        _fields_ = [("name", ctypes.c_char * 127), ("version", ctypes.c_uint8),
                    ("allocator", Allocator)]

    libc = ctypes.CDLL(None)
    for fn, res, args in (("malloc", c_void_p, [c_size_t]),
                          ("calloc", c_void_p, [c_size_t, c_size_t]),
                          ("realloc", c_void_p, [c_void_p, c_size_t]),
                          ("free", None, [c_void_p])):
        getattr(libc, fn).restype = res
        getattr(libc, fn).argtypes = args
    sizes: list = []
    stacks: list = []

    def record(size):
        sizes.append(int(size))
        if _ALLOC_STATE["trace"]:
            import traceback
            stacks.append(traceback.StackSummary.from_list(traceback.extract_stack()[:-2]))

    def on_malloc(_ctx, size):
        record(size)
        return libc.malloc(size)

    def on_calloc(_ctx, count, size):
        record(count * size)
        return libc.calloc(count, size)

    def on_realloc(_ctx, ptr, size):
        record(size)
        return libc.realloc(ptr, size)

    def on_free(_ctx, ptr, _size):
        libc.free(ptr)

    callbacks = (malloc_t(on_malloc), calloc_t(on_calloc), realloc_t(on_realloc),
                 free_t(on_free))
    handler = Handler(b"minimod_counting", 1, Allocator(None, *callbacks))
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = [c_void_p, ctypes.c_char_p, c_void_p]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    try:
        from numpy._core import _multiarray_umath as core
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as core
    table = ctypes.cast(get_pointer(core._ARRAY_API, None), ctypes.POINTER(c_void_p))
    set_handler = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)(table[304])
    # everything the C side points at must outlive every array the handler made
    name = ctypes.create_string_buffer(b"mem_handler")  # the capsule keeps only a pointer
    _ALLOC_STATE.update(sizes=sizes, stacks=stacks, trace=False,
                        keep=(callbacks, handler, libc, name),
                        capsule=new_capsule(ctypes.addressof(handler), name, None),
                        set_handler=set_handler)
    return _ALLOC_STATE


class count_allocations:
    """`with count_allocations() as sizes:` lists the byte size of every NumPy array buffer
    allocated in the block (in this thread; CPU arrays only).

    Converting a Python scalar argument of a ufunc makes a 0-d array (8 bytes or so): use
    `sizes.larger_than(16)` to ignore those. With `trace=True`, `sizes.stacks[i]` is the Python
    stack (a traceback.StackSummary) that made allocation i.
    """

    def __init__(self, trace: bool = False):
        self._trace = trace

    def __enter__(self) -> "AllocationList":
        state = _alloc_handler()
        del state["sizes"][:]
        del state["stacks"][:]
        state["trace"] = self._trace
        self._result = AllocationList()
        self._old = state["set_handler"](state["capsule"])
        return self._result

    def __exit__(self, *exc) -> None:
        state = _ALLOC_STATE
        state["set_handler"](self._old)
        state["trace"] = False
        self._result.extend(state["sizes"])
        self._result.stacks = list(state["stacks"])
        del state["sizes"][:]
        del state["stacks"][:]


class AllocationList(list):
    """Sizes in bytes of the array buffers allocated, in order."""

    stacks: list = []

    def larger_than(self, nbytes: int) -> list:
        return [s for s in self if s > nbytes]
