"""`mx.nd`: the NDArray class, creation and math routines, save/load and `nd.random`.

Every registered operator without a hand-written routine of the same name is available too,
run imperatively (`mx.nd.Activation`, `mx.nd.FullyConnected`, `mx.nd.broadcast_equal`; see
`imperative.py`), and MXNet's private names under `mx.nd._internal`. The optimizers' update
kernels (`mx.nd.sgd_mom_update` ...) come from `minimod.optimizer`, the other kernels MXNet
registers (`mx.nd.ftml_update`, `mx.nd.multi_sgd_update` ...) from
`minimod.optimizer_kernels`.
"""
from . import contrib, image, imperative, linalg, random, routines, serialization
from .ndarray import (
    NDArray,
    arange,
    array,
    empty,
    eye,
    from_numpy,
    full,
    linspace,
    normalize_dtype,
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
    "NDArray", "array", "zeros", "ones", "empty", "full", "arange", "linspace", "eye",
    "from_numpy", "load_frombuffer", "waitall", "save", "load",
    "save_to_bytes", "load_from_bytes", "read_record", "write_record", "random", "routines",
    "serialization", "normalize_dtype", "contrib", "linalg", "image", "onehot_encode",
] + [name for name in _routine_names if name != "METHODS"]


_UPDATE_KERNELS = frozenset((
    "sgd_update", "sgd_mom_update", "nag_mom_update", "adam_update", "rmsprop_update",
    "rmspropalex_update", "signsgd_update", "signum_update", "ftrl_update"))


def _kernel(name: str):
    """The optimizer kernel `mx.nd.<name>`, or None: the optimizers' own kernels live with
    the optimizers, the others (ftml_update, multi_sgd_update ...) in optimizer_kernels."""
    if name in _UPDATE_KERNELS:
        from .. import optimizer
        return optimizer.UPDATE_KERNELS[name]
    from .. import optimizer_kernels
    return optimizer_kernels.KERNELS.get(name)


def onehot_encode(indices: NDArray, out: NDArray) -> NDArray:
    """One-hot rows of `indices` written into `out` (N, C) and returned (MXNet's deprecated
    form of `one_hot`; an index outside [0, C) gives a row of zeros)."""
    return imperative.invoke("_onehot_encode", (indices, out), {"out": out})


def __getattr__(name: str):
    from ..ops.registry import list_ops
    fn = _kernel(name)
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
        from .. import optimizer_contrib_kernels  # what mx.nd.contrib's AdamW and LAMB call
        if name in optimizer_contrib_kernels.INTERNAL_KERNELS:
            return optimizer_contrib_kernels.INTERNAL_KERNELS[name]
        raise AttributeError("mx.nd._internal has no operator '%s'" % name)


_internal = _InternalNamespace()
