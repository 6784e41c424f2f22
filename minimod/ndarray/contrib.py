"""`mx.nd.contrib.X`: operator `_contrib_X` run imperatively (see minimod/ops/namespaces.py),
one of the contrib optimizer kernels MXNet serves here (`mx.nd.contrib.adamw_update`,
`multi_lamb_update` ...; update_kernels_contrib.py), `rand_zipfian`, `getnnz` and `edge_id`
(which read a CSRNDArray's stored entries; sparse/structure.py), or the control flow of
control_flow.py (`foreach`, `while_loop`, `cond`)."""
from ..context import current_context
from ..ops.namespaces import log_uniform_candidates, module_hooks
from . import random, update_kernels_contrib
from .control_flow import cond, foreach, while_loop  # noqa: F401  (served here)
from .imperative import op_function
from .sparse.structure import edge_id, getnnz  # noqa: F401  (served here)

_op_getattr, _op_dir = module_hooks(globals(), "_contrib_", lambda short, op: op_function(op))


def rand_zipfian(true_classes, num_sampled: int, range_max: int, ctx=None):
    """(sampled classes (num_sampled,) int64, expected counts of `true_classes` and of the
    sampled classes, float64) under the log-uniform (Zipfian) distribution over
    [0, range_max); see `minimod.ops.namespaces.log_uniform_candidates`. On `ctx` (default
    the current context)."""
    ctx = current_context() if ctx is None else ctx
    return log_uniform_candidates(
        lambda low, high, shape, dtype: random.uniform(low, high, shape, dtype, ctx=ctx),
        true_classes.as_in_context(ctx), num_sampled, range_max)


def __getattr__(name: str):
    fn = update_kernels_contrib.CONTRIB_KERNELS.get(name)
    if fn is None:
        return _op_getattr(name)
    globals()[name] = fn
    return fn


def __dir__():
    return sorted(set(_op_dir()) | set(update_kernels_contrib.CONTRIB_KERNELS)
                  | {"rand_zipfian", "foreach", "while_loop", "cond", "getnnz", "edge_id"})
