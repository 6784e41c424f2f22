"""Embedding on CuPy: the lookup as one kernel, and the weight gradient as two
deterministic ones that sum each table row's gradients in the order of the positions, as
NumPy's `add.at` does on the CPU.

Forward, the op's path clips the indices (two passes: CuPy's clip cannot cast) and takes the
rows; here one thread per (position, column) reads its row's entry: one launch, the same
values.

Backward, the op's path on CuPy adds every position's gradient row into the table with
`cupyx.scatter_add`, whose atomic adds meet in whatever order the threads run: where a
token repeats in the batch (always, in a language model) the sums differ in the last bits
from run to run, so two runs of one training, or one step with CUDA graphs on and off,
part ways. Here:

- one thread per position j counts the positions that sort before it by (row, position),
  and writes j at that rank: `order` lists the positions grouped by row, each row's in
  position order (a counting sort, O(n^2) compares over n positions, tiled through shared
  memory: microseconds for a language model's few thousand tokens a batch);
- one thread per (position in that order, column) that begins its row's run adds the run's
  gradients in order from 0 and writes the table row's entry.

With the table zeroed first (untouched rows' gradient is 0), that is three launches where
the op's path takes eight, and the sums are NumPy's, bit for bit. Rows come from the data
as the op reads them: clipped to [0, input_dim - 1] in the data's type, then truncated (a
NaN index counts as row 0 here; the op leaves it undefined).

Served for float32 or float64 tables, float32, float64, int32 or int64 data, C-contiguous
arrays, and (the gradient) up to `MAX_POSITIONS` positions, the sort being quadratic;
larger batches keep the op's path. Nothing here ran on a GPU when it was written: each GPU
checks the kernels once per table dtype against the op's NumPy path (`add.at`) on test data
before they serve, and `status()` says which runs. The CPU tests compile the source with
NVRTC and hold its host reference (`host_lookup`, `host_order`, `host_row_sums`) to the
op's NumPy path. A review compiled the source as host C++ and ran it thread by thread
against the op on about 3,900 cases: all equal but a row rounded past a float32 table of
over 2^24 rows, which both the kernels and the op now clip again.
"""
from __future__ import annotations

import numpy as np

from ..ops.embedding import Embedding
from ..ops.registry import create_op
from .checked_kernels import CheckedKernels
from .registry import fast_path

__all__ = ["KERNELS", "MAX_POSITIONS", "SOURCE", "TableKernels", "bind_backward",
           "bind_forward", "host_lookup", "host_order", "host_row_sums", "lookup_step",
           "row_sums_step", "status"]

#: threads per block (and rows per shared-memory tile of the sort: SOURCE's `tile[256]`)
THREADS = 256
#: the most positions (data elements) a batch may have for the kernels to serve it
MAX_POSITIONS = 1 << 16

SOURCE = r"""
// position j's table row: its index clipped to [0, last] in the data's type, truncated
template <typename D> __device__ long long row_of(const D* data, long long j, long long last) {
  D v = data[j];
  if (!(v >= (D)0)) v = (D)0;  // (a NaN too)
  if (v > (D)last) v = (D)last;
  long long row = (long long)v;
  return row > last ? last : row;  // (D)last may round up: float32 past 2^24 rows
}

template <typename D, typename T> __device__ void lookup(const D* data, const T* table, T* y,
                                                        long long n, long long cols,
                                                        long long last) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n * cols) return;
  long long j = i / cols, c = i % cols;
  y[i] = table[row_of(data, j, last) * cols + c];
}

template <typename D> __device__ void sort_positions(const D* data, long long* order,
                                                     long long n, long long last) {
  __shared__ long long tile[256];
  long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long mine = j < n ? row_of(data, j, last) : 0, rank = 0;
  for (long long base = 0; base < n; base += blockDim.x) {
    long long k = base + threadIdx.x;
    if (k < n) tile[threadIdx.x] = row_of(data, k, last);
    __syncthreads();
    long long count = n - base < blockDim.x ? n - base : blockDim.x;
    if (j < n)
      for (long long t = 0; t < count; ++t) {
        long long other = tile[t];
        rank += other < mine || (other == mine && base + t < j);
      }
    __syncthreads();
  }
  if (j < n) order[rank] = j;
}

template <typename D, typename T> __device__ void row_sums(const D* data,
                                                           const long long* order,
                                                           const T* gy, T* dw, long long n,
                                                           long long cols, long long last) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n * cols) return;
  long long p = i / cols, c = i % cols, row = row_of(data, order[p], last);
  if (p > 0 && row_of(data, order[p - 1], last) == row) return;  // not its row's first
  T acc = (T)0;
  for (long long q = p; q < n; ++q) {
    long long j = order[q];
    if (row_of(data, j, last) != row) break;
    acc += gy[j * cols + c];
  }
  dw[row * cols + c] = acc;
}

#define SORT_KERNEL(D, DC)                                                                  \
  extern "C" __global__ void minimod_embedding_order_##DC(const D* data, long long* order,   \
                                                          long long n, long long last) {    \
    sort_positions<D>(data, order, n, last);                                               \
  }
#define TABLE_KERNELS(D, DC, T, TC)                                                         \
  extern "C" __global__ void minimod_embedding_lookup_##DC##_##TC(                          \
      const D* data, const T* table, T* y, long long n, long long cols, long long last) {   \
    lookup<D, T>(data, table, y, n, cols, last);                                           \
  }                                                                                         \
  extern "C" __global__ void minimod_embedding_sums_##DC##_##TC(                            \
      const D* data, const long long* order, const T* gy, T* dw, long long n,               \
      long long cols, long long last) {                                                    \
    row_sums<D, T>(data, order, gy, dw, n, cols, last);                                    \
  }
#define DATA_KERNELS(D, DC) \
  SORT_KERNEL(D, DC) TABLE_KERNELS(D, DC, float, f) TABLE_KERNELS(D, DC, double, d)
DATA_KERNELS(float, f)
DATA_KERNELS(double, d)
DATA_KERNELS(int, i)
DATA_KERNELS(long long, q)
"""

#: the data dtypes the kernels read (NumPy's char: float32, float64, int32, int64)
DATA_CHARS = "fdiq"
#: ("order", data char) and ("lookup" or "sums", data char, table char) -> kernel name
KERNELS = {("order", dc): "minimod_embedding_order_" + dc for dc in DATA_CHARS}
KERNELS.update({(stage, dc, tc): "minimod_embedding_%s_%s_%s" % (stage, dc, tc)
                for stage in ("lookup", "sums") for dc in DATA_CHARS for tc in "fd"})


def _char(dtype) -> str:
    """The kernels' letter for `dtype` ('l' and 'q' are both int64 on Linux)."""
    char = np.dtype(dtype).char
    return "q" if char == "l" else char


# ----------------------------------------------------------------------------- reference

def host_rows(data, last: int):
    """The table row of each position, as the kernels read it."""
    v = np.asarray(data).reshape(-1)
    v = np.where(v >= 0, v, 0)  # (a NaN too)
    rows = np.minimum(v, np.asarray(last, v.dtype)).astype(np.int64)
    return np.minimum(rows, last)  # the data's type may round `last` up


def host_lookup(data, table, y, n: int, cols: int, last: int) -> None:
    """What the lookup kernel computes, on the host: each position's table row."""
    y.reshape(-1)[:n * cols] = table.reshape(-1, cols)[host_rows(data, last)[:n]].reshape(-1)


def host_order(data, order, n: int, last: int) -> None:
    """What the sort kernel computes, on the host: the positions by (row, position)."""
    rows = host_rows(data, last)[:n]
    order.reshape(-1)[:n] = np.lexsort((np.arange(n), rows))


def host_row_sums(data, order, gy, dw, n: int, cols: int, last: int) -> None:
    """What the sum kernel computes, on the host: each row's run of gradients added in order
    from 0 (the rows no position reads are left as they are)."""
    rows = host_rows(data, last)[:n]
    order = np.asarray(order).reshape(-1)[:n]
    gy, dw = gy.reshape(-1, cols), dw.reshape(-1, cols)
    sorted_rows = rows[order]
    starts = np.flatnonzero(np.r_[True, sorted_rows[1:] != sorted_rows[:-1]])
    ends = np.r_[starts[1:], n]
    width = int((ends - starts).max()) if n else 0
    acc = np.zeros((len(starts), cols), dw.dtype)
    for t in range(width):  # the t-th term of every run at once, in order
        live = starts + t < ends
        acc[live] += gy[order[starts[live] + t]]
    dw[sorted_rows[starts]] = acc


# ----------------------------------------------------------------------------- the kernels

class TableKernels(CheckedKernels):
    """The kernels on one array module, checked once per (device, table dtype) against the
    op's NumPy path on test data of every data dtype: repeated rows, indices out of the
    table on both sides, fractional indices."""

    SOURCE = SOURCE
    KERNELS = KERNELS
    unchecked = "not checked yet (no GPU Embedding has been bound)"

    def lookup(self, xp, data, table, y) -> tuple:
        """The lookup's launch (kernel, grid, block, arguments): y = table[rows of data]."""
        n, cols, last = data.size, table.shape[-1], np.int64(table.shape[0] - 1)
        blocks = (max(n * cols, 1) + THREADS - 1) // THREADS
        return (self.function(xp, ("lookup", _char(data.dtype), _char(table.dtype))),
                (blocks,), (THREADS,), (data, table, y, np.int64(n), np.int64(cols), last))

    def launches(self, xp, data, order, gy, dw, input_dim: int) -> list:
        """The two launches (kernel, grid, block, arguments) that write dw's touched rows."""
        n, cols, last = data.size, dw.shape[-1], np.int64(input_dim - 1)
        dc, tc = _char(data.dtype), _char(dw.dtype)
        blocks = (max(n, 1) + THREADS - 1) // THREADS
        sum_blocks = (max(n * cols, 1) + THREADS - 1) // THREADS
        return [(self.function(xp, ("order", dc)), (blocks,), (THREADS,),
                 (data, order, np.int64(n), last)),
                (self.function(xp, ("sums", dc, tc)), (sum_blocks,), (THREADS,),
                 (data, order, gy, dw, np.int64(n), np.int64(cols), last))]

    def _compare(self, xp, dtype) -> str:
        rng = np.random.default_rng(11)
        for data_dtype in (np.float32, np.float64, np.int32, np.int64):
            for n, dim, cols in ((1, 3, 2), (300, 7, 5), (700, 40, 3)):  # runs over tiles
                op = create_op("Embedding", {"input_dim": str(dim), "output_dim": str(cols)})
                host = rng.integers(-2, dim + 2, n).astype(data_dtype)
                if np.dtype(data_dtype).kind == "f":
                    host += 0.5  # truncated
                gy_host = rng.standard_normal((n, cols)).astype(dtype)
                table_host = rng.standard_normal((dim, cols)).astype(dtype)
                want_y, want = np.empty((n, cols), dtype), np.empty((dim, cols), dtype)
                op.forward(np, [host, table_host], [], [want_y], True)
                op.backward(np, [gy_host], [host], [], [None, want], [])
                data, gy = xp.asarray(host), xp.asarray(gy_host)
                table, y = xp.asarray(table_host), xp.empty((n, cols), dtype)
                dw, order = xp.zeros((dim, cols), dtype), xp.empty(n, np.int64)
                calls = [self.lookup(xp, data, table, y)] + self.launches(
                    xp, data, order, gy, dw, dim)
                for kernel, grid, block, args in calls:
                    kernel(grid, block, args)
                for name, got, expected in (("rows", y, want_y), ("gradient", dw, want)):
                    if not np.array_equal(xp.asnumpy(got), expected):
                        return "its %s for %d %s positions differ from the op's (%s)" % (
                            name, n, np.dtype(data_dtype).name, np.dtype(dtype).name)
        return ""


#: the process's one TableKernels
TABLE = TableKernels()


def status() -> str:
    """Which GPU Embedding runs, per device and table dtype checked so far, or why not
    these kernels."""
    return TABLE.status()


def _served(xp, data, arrays) -> bool:
    """Whether the kernels serve data `data` with the table-dtype `arrays` (CuPy, one float
    dtype, C order)."""
    table = arrays[-1]
    return (xp is not np and data.size > 0 and _char(data.dtype) in DATA_CHARS
            and all(a.dtype == table.dtype and a.flags.c_contiguous for a in arrays)
            and data.flags.c_contiguous and TABLE.serves(xp, table.device.id, table.dtype))


def lookup_step(xp, data, table, y):
    """A bound step writing y = table[rows of data] (one kernel), or None where the kernels
    do not serve these arrays. Embedding binds it, and take along axis 0 (take_rows.py)."""
    if not _served(xp, data, (y, table)):
        return None
    kernel, grid, block, args = TABLE.lookup(xp, data, table, y)

    def run_lookup(xp, is_train):
        kernel(grid, block, args)
    return run_lookup


def row_sums_step(xp, data, gy, dw, ddata):
    """A bound step writing the table's gradient `dw` (rows, cols) from the positions'
    gradients `gy` in position order, and 0 into the data's gradient `ddata` (None: not
    asked for), or None where the kernels do not serve these arrays."""
    if data.size > MAX_POSITIONS or not _served(xp, data, (gy, dw)):
        return None
    order = xp.empty(data.size, np.int64)  # the step's own, made once at bind
    launches = TABLE.launches(xp, data, order, gy, dw, dw.shape[0])

    def run_row_sums(xp, is_train):
        if ddata is not None:
            ddata.fill(0)  # the data's gradient is 0, as the ops write it
        dw.fill(0)
        for kernel, grid, block, args in launches:
            kernel(grid, block, args)
    return run_row_sums


@fast_path(Embedding, stage="forward")
def bind_forward(op, xp, inputs, aux, out):
    return lookup_step(xp, inputs[0], inputs[1], out[0])


@fast_path(Embedding, stage="backward")
def bind_backward(op, xp, out_grads, inputs, outputs, in_grads, aux):
    dw = in_grads[1]
    return None if dw is None else row_sums_step(xp, inputs[0], out_grads[0], dw, in_grads[0])
