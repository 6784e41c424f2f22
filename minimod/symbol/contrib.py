"""`mx.sym.contrib.X`: a node of operator `_contrib_X` (see minimod/ops/namespaces.py), or
`rand_zipfian`. The control-flow constructors (`foreach`, `while_loop`, `cond`) raise: in
MXNet they make subgraph operators, which minimod's graphs do not have."""
from ..base import MXNetError
from ..ops.namespaces import log_uniform_candidates, module_hooks
from . import random
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
            "mx.sym.contrib.%s makes a subgraph operator, which minimod does not have. %s, or "
            "run the loop imperatively with mx.nd.contrib.%s." % (name, alternative, name))
    refuse.__name__ = name
    refuse.__doc__ = "Refused: MXNet's %s is a subgraph operator (see the module doc)." % name
    return refuse


foreach = _subgraph_refused(
    "foreach", "Unroll it in Python instead (one body call per step on "
    "mx.sym.split(data, num_outputs=T, axis=0, squeeze_axis=True)), as mx.rnn's unroll does")
while_loop = _subgraph_refused(
    "while_loop", "Unroll it in Python to max_iterations steps instead")
cond = _subgraph_refused(
    "cond", "Compute both branches and pick with mx.sym.where(pred, then, else) instead")


def __dir__():
    return sorted(set(_op_dir()) | {"rand_zipfian", "foreach", "while_loop", "cond"})
