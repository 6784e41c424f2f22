"""Streams, CUDA-graph capture and cuBLAS for the NumPy stand-in of CuPy (tests/fake_cupy.py).

Capture is modelled as the GPU does it: while a stream captures, nothing runs. Every kernel
the stand-in would launch (a ufunc, a function, an assignment, an ElementwiseKernel, a GEMM)
is recorded as a thunk over the very arrays it reads and writes, and `Graph.launch` runs the
thunks in order. An operation that writes into an existing array is only recorded; one that
makes a new array (a temporary) computes it from the stale values of now, to know its shape,
fills it with NaN (garbage, as fresh GPU memory is) and records the computation into that
same array. So a step that uses a value it computed during capture outside the graph, or
whose results depend on Python state that changes between replays (a learning rate baked in
as a number), gives different results from an eager run: what the tests compare.

What a real capture refuses raises here too: synchronising, reading device values on the
host (`get`, `item`, `float` ...), copying host data to the device, and capturing on the
default stream. Each temporary allocated during capture is noted with the allocator that
served it (`allocations()`): "private" under `using_allocator(pool.malloc)`, else
"default".
"""
import contextlib

import numpy as _np

_STATE = {"thunks": None, "allocator": "default", "allocations": [], "streams": [],
          "gemms": 0}


def capturing() -> bool:
    return _STATE["thunks"] is not None


def record(thunk) -> None:
    _STATE["thunks"].append(thunk)


def allocations() -> list:
    """(allocator, what) for every temporary made during the captures so far."""
    return list(_STATE["allocations"])


def reset_allocations() -> None:
    _STATE["allocations"].clear()


def refuse(what: str) -> None:
    """Raise as CUDA does for an operation a capturing stream forbids."""
    if capturing():
        raise RuntimeError("cudaErrorStreamCaptureUnsupported: %s while a stream captures"
                           % what)


def _poison(arr) -> None:
    if arr.dtype.kind in "fc":
        arr.fill(_np.nan)
    elif arr.dtype.kind in "iu":
        arr.fill(-7 if arr.dtype.kind == "i" else 7)
    elif arr.dtype.kind == "b":
        arr.fill(True)


def fresh(result, recompute, inputs, what: str):
    """During capture: `result` (a host NumPy array just computed from stale values) as a
    temporary of the graph (poisoned, and recomputed on each launch), unless it is a view of
    one of `inputs`, which costs no kernel."""
    if not isinstance(result, _np.ndarray) or result.size == 0:
        return result
    for arr in inputs:
        if isinstance(arr, _np.ndarray) and _np.may_share_memory(result, arr):
            return result
    _STATE["allocations"].append((_STATE["allocator"], what))
    _poison(result)

    def run():
        result[...] = recompute()
    record(run)
    return result


def zero_indices(key):
    """`key` with its integer index arrays zeroed: what a capture can compute a gather's
    shape from while those indices are still garbage."""
    if isinstance(key, tuple):
        return tuple(zero_indices(k) for k in key)
    if isinstance(key, _np.ndarray) and key.dtype.kind in "iu":
        return _np.zeros_like(key)
    return key


class Graph:
    def __init__(self, thunks):
        self.thunks = thunks
        self.launches = 0

    def launch(self, stream=None):
        refuse("launching a graph")
        self.launches += 1
        for thunk in self.thunks:
            thunk()


class Stream:
    """A stream: the current one inside `with`, and the one that captures."""

    null = None

    def __init__(self, null=False, non_blocking=False, ptds=False):
        self.ptr = 0 if null else id(self)
        self.non_blocking = non_blocking
        self._capturing = False

    def __enter__(self):
        _STATE["streams"].append(self)
        return self

    def __exit__(self, *exc):
        _STATE["streams"].pop()

    def begin_capture(self, mode=None):
        if self.ptr == 0:
            raise RuntimeError("cannot capture on the default (legacy) stream")
        if capturing():
            raise RuntimeError("a capture is already recording")
        _STATE["thunks"] = []
        self._capturing = True

    def end_capture(self):
        if not self._capturing:
            raise RuntimeError("this stream is not capturing")
        thunks, _STATE["thunks"] = _STATE["thunks"], None
        self._capturing = False
        return Graph(thunks)

    def is_capturing(self):
        return self._capturing

    def synchronize(self):
        refuse("synchronising a stream")


Stream.null = Stream(null=True)


def get_current_stream():
    return _STATE["streams"][-1] if _STATE["streams"] else Stream.null


class MemoryPool:
    def malloc(self, nbytes):
        raise NotImplementedError("the stand-in allocates through NumPy")

    def free_all_blocks(self):
        pass


@contextlib.contextmanager
def using_allocator(allocator=None):
    previous = _STATE["allocator"]
    _STATE["allocator"] = "default" if allocator is None else "private"
    try:
        yield
    finally:
        _STATE["allocator"] = previous


class Blas:
    """cuBLAS's column-major GEMM (`minimod.gemm.CublasLib.gemm`'s interface) on NumPy: each
    operand is read from its array's first element with the plan's leading dimension, as
    cuBLAS reads the pointer it is given, and a read past the array's memory raises."""

    path = "stand-in"

    def gemm(self, xp, dtype, plan, a, b, c, beta=0):
        from tests.fake_cupy import _check_operands
        _check_operands((a, b, c), "gemm")
        _STATE["gemms"] += 1
        if capturing():
            record(lambda: self._gemm(plan, a, b, c, beta))
        else:
            self._gemm(plan, a, b, c, beta)

    def gemm_batched(self, xp, dtype, plan, strides, count, a, b, c):
        """cuBLAS's strided batched GEMM over (count, rows, cols) operands whose matrices
        lie `strides` elements apart (checked against the arrays), each read like `gemm`'s."""
        from tests.fake_cupy import _check_operands
        _check_operands((a, b, c), "gemm_batched")
        _STATE["gemms"] += 1
        for x, stride in zip((a, b, c), strides):
            if count > 1 and x.strides[0] != stride * x.itemsize:
                raise ValueError("batch stride %d does not match the operand's %d bytes"
                                 % (stride, x.strides[0]))
        views = [[x.view(_np.ndarray)[i] for i in range(count)] for x in (a, b, c)]

        def run():
            for a_i, b_i, c_i in zip(*views):
                self._gemm(plan, a_i, b_i, c_i)
        if capturing():
            record(run)
        else:
            run()

    @staticmethod
    def _gemm(plan, a, b, c, beta=0):
        ta, tb, m, n, k, lda, ldb, ldc = plan
        op_a = _colmajor(a, (m, k) if ta == 0 else (k, m), lda)
        op_b = _colmajor(b, (k, n) if tb == 0 else (n, k), ldb)
        out = _colmajor(c, (m, n), ldc)
        # contiguous copies, so NumPy multiplies through BLAS (its loop over strided views
        # sums in another order, less accurately than cuBLAS or OpenBLAS do)
        product = (_np.ascontiguousarray(op_a if ta == 0 else op_a.T)
                   @ _np.ascontiguousarray(op_b if tb == 0 else op_b.T))
        if beta:
            out += product
        else:
            out[...] = product


_byte_bounds = getattr(getattr(_np.lib, "array_utils", None), "byte_bounds", None) or getattr(
    _np, "byte_bounds", None)


def _colmajor(arr, shape, ld):
    """The column-major matrix of `shape` with leading dimension `ld` starting at arr's first
    element, as a strided NumPy view; raises if it reaches outside arr's memory."""
    rows, cols = shape
    if ld < max(1, rows):
        raise ValueError("leading dimension %d < %d rows" % (ld, rows))
    host = arr.view(_np.ndarray)
    item = host.itemsize
    start = host.__array_interface__["data"][0]
    base = host
    while isinstance(base.base, _np.ndarray):
        base = base.base
    low, high = _byte_bounds(base)
    last = start + ((rows - 1) + (cols - 1) * ld) * item
    if start < low or last + item > high:
        raise ValueError("a (%d, %d) matrix with ld %d reads outside the array" % (rows, cols,
                                                                               ld))
    return _np.lib.stride_tricks.as_strided(host, shape=(rows, cols),
                                            strides=(item, ld * item))


#: CUDA sources a test registers with a NumPy reference per kernel (mx.rtc's tests):
#: {source: {kernel name: reference(grid, block, shared_mem, *host arrays and scalars)}}
USER_KERNELS: dict = {}


class RawModule:
    """`cupy.RawModule` for minimod's raw kernels (minimod.device_rng's generator and
    minimod.kernels.softmax_rows's row softmax) and the sources tests register in USER_KERNELS:
    each function runs a NumPy reference of its kernel over the arrays it is launched with,
    reading them at run time (recorded, not run, during capture)."""

    def __init__(self, code=None, **kwargs):
        self._user = USER_KERNELS.get(code)
        if self._user is None and code not in _raw_sources():
            raise NotImplementedError("the stand-in runs only minimod's own raw kernels and "
                                      "the ones tests register")

    def compile(self):
        """Nothing to compile: the references are Python."""

    def get_function(self, name):
        if self._user is not None:
            if name not in self._user:
                raise AttributeError("no kernel %r in the module" % name)
            return _UserFunction(self._user[name])
        return _RawFunction(name)


class _UserFunction:
    def __init__(self, reference):
        self.reference = reference

    def __call__(self, grid, block, args, shared_mem=0):
        hosts = [a.view(_np.ndarray) if isinstance(a, _np.ndarray) else a for a in args]
        self.reference(grid, block, shared_mem, *hosts)


def _raw_sources() -> tuple:
    from minimod import device_rng
    from minimod.kernels import batchnorm_gpu, embedding, pool_max, pool_overlap, softmax_rows
    return (device_rng.SOURCE, softmax_rows.SOURCE, pool_max.SOURCE, pool_overlap.SOURCE,
            embedding.SOURCE, batchnorm_gpu.SOURCE)


class _RawFunction:
    """One kernel of the module: `run` is its NumPy reference, and `launched` checks the
    launch as the kernel would need it and gives the arguments the reference also needs."""

    def __init__(self, name):
        kernels = {"minimod_rng_uniform": (self._uniform, self._a_thread_per_element),
                   "minimod_rng_advance": (self._advance, None)}
        kernels.update({k: (self._softmax_rows, self._a_block_per_row)
                        for k in _softmax_kernels()})
        kernels.update({k: (self._window_max(stage), self._a_thread_per_window(stage))
                        for (stage, _), k in _pool_kernels().items()})
        kernels.update({k: (self._window_pool(stage), self._a_thread_per_window(stage))
                        for (stage, _), k in _overlap_kernels().items()})
        kernels.update({k: (self._embedding(key[0]), self._a_thread_per_position(key[0]))
                        for key, k in _embedding_kernels().items()})
        kernels.update({k: (self._channel_norm(stage), self._a_block_per_channel(stage))
                        for (stage, _), k in _norm_kernels().items()})
        if name not in kernels:
            raise AttributeError("no kernel %r in the module" % name)
        self.name, (self.run, self.launched) = name, kernels[name]

    def __call__(self, grid, block, args):
        from tests.fake_cupy import _check_operands
        _check_operands(args, self.name)
        hosts = [a.view(_np.ndarray) if isinstance(a, _np.ndarray) else a for a in args]
        if self.launched is not None:
            hosts += self.launched(grid, block, args)
        if capturing():
            record(lambda: self.run(*hosts))
        else:
            self.run(*hosts)

    def _a_thread_per_element(self, grid, block, args) -> list:
        if grid[0] * block[0] < int(args[-1]):
            raise ValueError("%s launched with too few threads" % self.name)
        return []

    def _a_block_per_row(self, grid, block, args) -> list:
        if args[0].dtype.char != ("f" if self.name.endswith("f32") else "d"):
            raise TypeError("%s launched on %s data" % (self.name, args[0].dtype))
        return [grid[0]]  # the rows

    @staticmethod
    def _uniform(state, out, count):
        from minimod import device_rng
        out.reshape(-1)[:int(count)] = device_rng.host_uniform(int(state[0]), int(state[1]),
                                                               int(count))

    @staticmethod
    def _advance(state, count):
        state[1] += _np.uint64(count)

    def _a_thread_per_window(self, stage):
        """The launch check of a pooling kernel: a thread per output (forward) or per input
        element (backward), and arrays of the kernel's dtype."""
        from minimod.kernels import pool_max

        def launched(grid, block, args):
            dims = dict(zip(pool_max.FIELDS, (int(a) for a in args[3:])))
            count = dims["planes"] * (dims["od"] * dims["oh"] * dims["ow"]
                                      if stage.endswith("forward")
                                      else dims["d"] * dims["h"] * dims["w"])
            if grid[0] * block[0] < count:
                raise ValueError("%s launched with too few threads" % self.name)
            if any(a.dtype.char != ("f" if self.name.endswith("f32") else "d")
                   for a in args[:3]):
                raise TypeError("%s launched on %s data" % (self.name, args[0].dtype))
            return []
        return launched

    @staticmethod
    def _window_max(stage):
        from minimod.kernels import pool_max

        def run(a, b, c, *scalars):
            dims = dict(zip(pool_max.FIELDS, (int(v) for v in scalars)))
            (pool_max.host_forward if stage == "forward" else pool_max.host_backward)(
                a, b, c, dims)
        return run

    @staticmethod
    def _window_pool(stage):
        from minimod.kernels import pool_max, pool_overlap
        kind, direction = stage.split("_")

        def run(a, b, c, *scalars):
            dims = dict(zip(pool_max.FIELDS, (int(v) for v in scalars)))
            (pool_overlap.host_forward if direction == "forward" else
             pool_overlap.host_backward)(kind, a, b, c, dims)
        return run

    def _a_thread_per_position(self, stage):
        """The launch check of an Embedding kernel: a thread per position (sort) or per
        (position, column) (lookup, sums), an int64 `order`, tables of the kernel's
        dtype."""
        def launched(grid, block, args):
            n = int(args[2] if stage == "order" else args[3 if stage == "lookup" else 4])
            count = n if stage == "order" else n * int(args[-2])
            if grid[0] * block[0] < count or block[0] > 256:
                raise ValueError("%s launched with too few threads, or too many a block"
                                 % self.name)
            tables = args[1:3] if stage == "lookup" else args[2:4]
            if (stage != "lookup" and args[1].dtype != _np.int64) or (stage != "order" and any(
                    a.dtype.char != self.name[-1] for a in tables)):
                raise TypeError("%s launched on the wrong dtypes" % self.name)
            return []
        return launched

    @staticmethod
    def _embedding(stage):
        from minimod.kernels import embedding

        def run(*args):
            if stage == "order":
                data, order, n, last = args
                embedding.host_order(data, order, int(n), int(last))
            elif stage == "lookup":
                data, table, y, n, cols, last = args
                embedding.host_lookup(data, table, y, int(n), int(cols), int(last))
            else:
                data, order, gy, dw, n, cols, last = args
                embedding.host_row_sums(data, order, gy, dw, int(n), int(cols), int(last))
        return run

    def _a_block_per_channel(self, stage):
        """The launch check of a BatchNorm kernel: a block per channel, arrays of the
        kernel's dtype."""
        def launched(grid, block, args):
            arrays, channels = (args[:8], args[9]) if stage == "forward" else (args[:10],
                                                                              args[11])
            if grid[0] != int(channels) or block[0] > 1024:
                raise ValueError("%s launched with %s blocks for %d channels"
                                 % (self.name, grid, int(channels)))
            if any(a.dtype.char != ("f" if self.name.endswith("f32") else "d")
                   for a in arrays):
                raise TypeError("%s launched on the wrong dtypes" % self.name)
            return []
        return launched

    @staticmethod
    def _channel_norm(stage):
        from minimod.kernels import batchnorm_gpu

        def run(*args):
            (batchnorm_gpu.host_forward if stage == "forward" else
             batchnorm_gpu.host_backward)(*args)
        return run

    @staticmethod
    def _softmax_rows(x, y, cols, rows):
        from minimod.kernels import softmax_rows
        n = int(rows) * int(cols)
        softmax_rows.host_softmax_rows(x.reshape(-1)[:n].reshape(int(rows), int(cols)),
                                       y.reshape(-1)[:n].reshape(int(rows), int(cols)))


def _pool_kernels() -> dict:
    from minimod.kernels import pool_max
    return pool_max.KERNELS


def _norm_kernels() -> dict:
    from minimod.kernels import batchnorm_gpu
    return batchnorm_gpu.KERNELS


def _embedding_kernels() -> dict:
    from minimod.kernels import embedding
    return embedding.KERNELS


def _overlap_kernels() -> dict:
    from minimod.kernels import pool_overlap
    return pool_overlap.KERNELS


def _softmax_kernels() -> tuple:
    from minimod.kernels import softmax_rows
    return tuple(softmax_rows.KERNELS.values())


def captured_kernels(exe) -> int:
    """The kernels the stand-in recorded in an executor's captured graphs, once every step
    list of it replays as a graph (checked)."""
    assert set(exe.graph_status().values()) == {"graph"}, exe.graph_status()
    return sum(len(g.graph.thunks) for g in exe._graphs.graphs.values())
