"""`mx.sym.contrib.X`: a node of operator `_contrib_X` (see minimod/ops/namespaces.py),
`rand_zipfian`, `foreach` (control_flow.py), or `while_loop` and `cond`, built from ordinary
operators (control_flow_masked.py)."""
from ..ops.namespaces import log_uniform_candidates, module_hooks
from . import random
from .control_flow import foreach  # noqa: F401  (served here)
from .control_flow_masked import cond, while_loop  # noqa: F401  (served here)
from .namespaces import constructor

_op_getattr, _op_dir = module_hooks(globals(), "_contrib_", constructor)
__getattr__ = _op_getattr


def rand_zipfian(true_classes, num_sampled: int, range_max: int):
    """Symbols (sampled classes (num_sampled,) int64, expected counts of `true_classes` and of
    the sampled classes, float64) under the log-uniform (Zipfian) distribution over
    [0, range_max), drawn anew at every forward; see
    `minimod.ops.namespaces.log_uniform_candidates`."""
    return log_uniform_candidates(
        lambda low, high, shape, dtype: random.uniform(low, high, shape=shape, dtype=dtype),
        true_classes, num_sampled, range_max)


def __dir__():
    return sorted(set(_op_dir()) | {"rand_zipfian", "foreach", "while_loop", "cond"})
