"""`mx.nd`: the NDArray class, creation and math routines, save/load and `nd.random`.

Every registered operator without a hand-written routine of the same name is available too,
run imperatively (`mx.nd.Activation`, `mx.nd.FullyConnected`, `mx.nd.broadcast_equal`; see
`imperative.py`), and MXNet's private names under `mx.nd._internal`. The optimizer kernels
(`mx.nd.sgd_mom_update`, `mx.nd.ftml_update`, `mx.nd.multi_sgd_update` ...) are in
`update_kernels.py` and `update_kernels_multi.py` (their arithmetic, which the built-in
optimizers run too, in `update_steps*.py`), the contrib ones in `update_kernels_contrib.py`.
"""
from . import (
    contrib,
    image,
    imperative,
    linalg,
    op,
    random,
    routines,
    serialization,
    update_kernels,
    update_kernels_contrib,
    update_kernels_multi,
)
from .cached_op import CachedOp
from .dlpack import from_dlpack, to_dlpack_for_read, to_dlpack_for_write
from .ndarray import (  # MXNet's mx.nd has the dtype and grad_req code tables too
    _DTYPE_MX_TO_NP,  # noqa: F401 (served as mx.nd._DTYPE_MX_TO_NP)
    _DTYPE_NP_TO_MX,  # noqa: F401
    _GRAD_REQ_MAP,  # noqa: F401
    NDArray,
    arange,
    array,
    empty,
    eye,
    from_numpy,
    full,
    linspace,
    normalize_dtype,
    onehot_encode,
    ones,
    waitall,
    zeros,
)
from .routines import *  # noqa: F401,F403 - the routine names are mx.nd's public API
from .routines import __all__ as _routine_names
from .serialization import (
    load,
    load_from_bytes,
    load_frombuffer,
    read_record,
    save,
    save_to_bytes,
    write_record,
)

__all__ = [
    "NDArray", "CachedOp", "array", "zeros", "ones", "empty", "full", "arange", "linspace", "eye",
    "from_numpy", "load_frombuffer", "waitall", "save", "load",
    "save_to_bytes", "load_from_bytes", "read_record", "write_record", "random", "routines",
    "serialization", "normalize_dtype", "contrib", "linalg", "image", "onehot_encode",
    "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write", "op",
] + [name for name in _routine_names if name != "METHODS"]


#: the optimizer kernels `mx.nd.<name>` serves
_KERNELS = {**update_kernels.UPDATE_KERNELS, **update_kernels.KERNELS,
            **update_kernels_multi.KERNELS}


def __getattr__(name: str):
    from ..ops.registry import list_ops
    fn = _KERNELS.get(name)
    if fn is not None:
        globals()[name] = fn
        return fn
    if not name.startswith("_") and name in list_ops():
        fn = imperative.op_function(name)
        globals()[name] = fn
        return fn
    raise AttributeError("module 'minimod.ndarray' has no attribute '%s'" % name)


class _InternalNamespace:
    """`mx.nd._internal`: MXNet's private operator names (`_plus_scalar`, `_full` ...)."""

    def __getattr__(self, name: str):
        from ..ops.registry import list_ops
        if name in list_ops():
            return imperative.op_function(name)
        if name in update_kernels_contrib.INTERNAL_KERNELS:  # what mx.nd.contrib's AdamW
            return update_kernels_contrib.INTERNAL_KERNELS[name]  # and LAMB call
        raise AttributeError("mx.nd._internal has no operator '%s'" % name)


_internal = _InternalNamespace()
