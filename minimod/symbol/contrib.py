"""`mx.sym.contrib.X`: a node of operator `_contrib_X` (see minimod/ops/namespaces.py),
`rand_zipfian`, or `foreach` (control_flow.py). `while_loop` and `cond` raise: MXNet 1.9.1
builds them but cannot bind them (its shape inference gives up on their subgraphs)."""
from ..base import MXNetError
from ..ops.namespaces import log_uniform_candidates, module_hooks
from . import random
from .control_flow import foreach  # noqa: F401  (served here)
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


def _subgraph_refused(name: str, alternative: str):
    def refuse(*args, **kwargs):
        raise MXNetError(
            "mx.sym.contrib.%s: MXNet 1.9.1 builds this subgraph operator but cannot bind it "
            "(its shape inference gives up on it), and minimod does not build it. %s, or run "
            "it imperatively with mx.nd.contrib.%s." % (name, alternative, name))
    refuse.__name__ = name
    refuse.__doc__ = "Refused: MXNet cannot bind a symbolic %s (see the module doc)." % name
    return refuse


while_loop = _subgraph_refused(
    "while_loop", "Unroll it in Python to max_iterations steps instead")
cond = _subgraph_refused(
    "cond", "Compute both branches and pick with mx.sym.where(pred, then, else) instead")


def __dir__():
    return sorted(set(_op_dir()) | {"rand_zipfian", "foreach", "while_loop", "cond"})
