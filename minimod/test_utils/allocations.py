"""Counting the array buffers NumPy allocates: the tool behind minimod's "a planned step
allocates nothing" tests, public for users who check their own code the same way.

`with count_allocations() as sizes:` lists the byte size of every NumPy array buffer allocated
inside the block.
"""
from __future__ import annotations

__all__ = ["count_allocations", "AllocationList"]

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
