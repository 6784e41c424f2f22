"""`mx.nd.contrib.X`: operator `_contrib_X` run imperatively (see minimod/ops/namespaces.py),
or one of the contrib optimizer kernels MXNet serves here (`mx.nd.contrib.adamw_update`,
`multi_lamb_update` ...; update_kernels_contrib.py)."""
from ..ops.namespaces import module_hooks
from . import update_kernels_contrib
from .imperative import op_function

_op_getattr, _op_dir = module_hooks(globals(), "_contrib_", lambda short, op: op_function(op))


def __getattr__(name: str):
    fn = update_kernels_contrib.CONTRIB_KERNELS.get(name)
    if fn is None:
        return _op_getattr(name)
    globals()[name] = fn
    return fn


def __dir__():
    return sorted(set(_op_dir()) | set(update_kernels_contrib.CONTRIB_KERNELS))
