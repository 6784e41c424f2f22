"""`mx.nd.contrib.X`: operator `_contrib_X` run imperatively (see minimod/ops/namespaces.py),
or one of the contrib optimizer kernels MXNet serves here (`mx.nd.contrib.adamw_update`,
`multi_lamb_update` ...; minimod/optimizer_contrib_kernels.py)."""
from .. import optimizer_contrib_kernels
from ..ops.namespaces import module_hooks
from .imperative import op_function

_op_getattr, _op_dir = module_hooks(globals(), "_contrib_", lambda short, op: op_function(op))


def __getattr__(name: str):
    fn = optimizer_contrib_kernels.CONTRIB_KERNELS.get(name)
    if fn is None:
        return _op_getattr(name)
    globals()[name] = fn
    return fn


def __dir__():
    return sorted(set(_op_dir()) | set(optimizer_contrib_kernels.CONTRIB_KERNELS))
