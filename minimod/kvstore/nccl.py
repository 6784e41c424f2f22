"""In-process multi-GPU gradient reduction: NCCL when CuPy's bindings load, else peer copies.

`reduce_method(contexts)` picks how a KVStore of type 'nccl' (or 'device') sums one buffer per
device: 'nccl' when the contexts are two or more distinct GPUs and `cupy.cuda.nccl` is usable,
otherwise 'peer', the KVStore's own path (copy every buffer to the first device, add there, copy
the sum back), which also serves CPU contexts and mixes such as [cpu(0), gpu(0)].

`NCCLReducer` keeps one NCCL communicator per set of GPUs (`ncclCommInitAll`, no MPI: one
process drives every GPU) and sums buffers in place with one grouped all-reduce. The sums are
the same as the peer path's up to float rounding (NCCL adds in ring order), within the float32
tolerance table of the README.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .. import backend
from ..base import MXNetError

__all__ = ["reduce_method", "nccl_available", "NCCLReducer", "get_reducer"]

_DTYPE_NAMES = {
    np.dtype(np.float16): "NCCL_FLOAT16", np.dtype(np.float32): "NCCL_FLOAT32",
    np.dtype(np.float64): "NCCL_FLOAT64", np.dtype(np.int32): "NCCL_INT32",
    np.dtype(np.int64): "NCCL_INT64", np.dtype(np.int8): "NCCL_INT8",
    np.dtype(np.uint8): "NCCL_UINT8",
}


def nccl_available() -> bool:
    """Whether CuPy's NCCL bindings load on this machine (False without CuPy or GPUs)."""
    return backend.nccl_module() is not None


def reduce_method(contexts: Sequence, nccl: Optional[bool] = None) -> str:
    """'nccl' or 'peer': how to sum one buffer per context in `contexts`.

    `nccl` says whether NCCL is usable (default: ask the backend); NCCL is chosen only for two
    or more distinct GPU contexts, since it neither reaches host memory nor reduces a device
    with itself.
    """
    contexts = list(contexts)
    if len(contexts) < 2 or any(c.device_typeid != 2 for c in contexts):
        return "peer"
    if len({c.device_id for c in contexts}) != len(contexts):
        return "peer"
    if nccl is None:
        nccl = nccl_available()
    return "nccl" if nccl else "peer"


class NCCLReducer:
    """Sums same-shaped CuPy buffers, one per GPU of `device_ids`, in place on every GPU."""

    def __init__(self, device_ids: Sequence[int]):
        self.device_ids = [int(d) for d in device_ids]
        self._nccl = backend.nccl_module()
        if self._nccl is None:
            raise MXNetError("NCCL is not available (%s); use kvstore 'device' instead"
                             % backend.cupy_status())
        # one communicator per GPU, all made by one ncclCommInitAll call (CuPy's `initAll`
        # takes the list of device ids and returns the communicators in that order)
        self._comms = self._nccl.NcclCommunicator.initAll(list(self.device_ids))

    def _dtype_code(self, dtype) -> int:
        name = _DTYPE_NAMES.get(np.dtype(dtype))
        if name is None:
            raise MXNetError("NCCL cannot reduce arrays of dtype %s" % np.dtype(dtype).name)
        return getattr(self._nccl, name)

    def allreduce(self, buffers: Sequence) -> None:
        """buffers[k] (on GPU device_ids[k]) all become the sum of the buffers."""
        if len(buffers) != len(self.device_ids):
            raise MXNetError("NCCL all-reduce got %d buffers for %d GPUs"
                             % (len(buffers), len(self.device_ids)))
        first = buffers[0]
        for k, buf in enumerate(buffers):
            if backend.device_of(buf) != self.device_ids[k]:
                raise MXNetError("NCCL all-reduce: buffer %d is on %s, expected gpu(%d)"
                                 % (k, "cpu" if backend.device_of(buf) < 0
                                    else "gpu(%d)" % backend.device_of(buf),
                                    self.device_ids[k]))
            if buf.shape != first.shape or buf.dtype != first.dtype:
                raise MXNetError("NCCL all-reduce: buffer %d has shape %s %s, buffer 0 %s %s"
                                 % (k, buf.shape, buf.dtype, first.shape, first.dtype))
            if not buf.flags.c_contiguous:
                raise MXNetError("NCCL all-reduce needs contiguous buffers (buffer %d is not)"
                                 % k)
        code = self._dtype_code(first.dtype)
        nccl = self._nccl
        xp = backend.array_module_of(first)
        # one process drives every GPU: the per-GPU calls form one NCCL group, else the first
        # call would wait for peers that are never launched
        nccl.groupStart()
        try:
            for comm, device_id, buf in zip(self._comms, self.device_ids, buffers):
                with xp.cuda.Device(device_id):
                    # in place; on each GPU's current stream, so it follows the backward kernels
                    comm.allReduce(buf.data.ptr, buf.data.ptr, buf.size, code, nccl.NCCL_SUM,
                                   xp.cuda.get_current_stream().ptr)
        finally:
            nccl.groupEnd()


_REDUCERS: dict = {}


def get_reducer(contexts: Sequence) -> NCCLReducer:
    """The cached reducer of these GPU contexts (communicators are costly to create)."""
    key = tuple(c.device_id for c in contexts)
    reducer = _REDUCERS.get(key)
    if reducer is None:
        reducer = _REDUCERS[key] = NCCLReducer(key)
    return reducer
