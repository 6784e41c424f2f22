"""The optimizers behind `SVRGModule` (`mx.contrib.svrg_optimization.svrg_optimizer`).

`SVRGModule` keeps, beside every parameter, an average of its gradient over the whole data set
(the "full gradient" of the SVRG snapshot). With a kvstore, that average is summed over devices
in the store under the key `<name>_full`, and the store's updater must then *assign* the pushed
sum instead of taking an optimizer step. `_SVRGOptimizer` is that updater's optimizer: it routes
the `<name>_full` keys to `_AssignmentOptimizer` (weight := gradient) and every other key to
the user's optimizer (`default_opt`), which it creates from the name and the parameters given
to `init_optimizer`.

One bend from MXNet 1.9.1, which routes every parameter whose name merely *contains* "full":
there, the weights of an unnamed FullyConnected layer ("fullyconnected0_weight") are overwritten
by their gradient at every step instead of being trained. Here a key is a full-gradient key
when its name is `<p>_full` for a parameter `p` of idx2name, so such layers train normally;
for every other name the two agree.

Both are registered under MXNet's names ('_svrgoptimizer', '_assignmentoptimizer'), so that
`mx.optimizer.create('_SVRGOptimizer', default_optimizer='sgd', ...)` works as in MXNet 1.9.1.
They are meant for SVRGModule only.
"""
from __future__ import annotations

from ... import optimizer as opt

__all__ = ["_AssignmentOptimizer", "_SVRGOptimizer"]

# The constructor arguments of the base Optimizer: `_SVRGOptimizer` keeps these for itself and
# hands everything it is given (these included) to the optimizer it wraps.
_BASE_PARAMS = ("rescale_grad", "param_idx2name", "wd", "clip_gradient", "learning_rate",
                "lr_scheduler", "sym", "begin_num_update", "multi_precision", "param_dict")


@opt.register
class _AssignmentOptimizer(opt.Optimizer):
    """weight := grad. Accumulates the full gradients in a kvstore: the store sums what the
    devices push and this "update" stores the sum."""

    def update(self, index, weight, grad, state):
        weight[:] = grad


@opt.register
class _SVRGOptimizer(opt.Optimizer):
    """Two optimizers behind one: keys of parameters named "...full..." go to an
    `_AssignmentOptimizer`, all others to `default_opt`.

    Parameters
    ----------
    default_optimizer : str or Optimizer
        The optimizer that trains the parameters; a name is created with all the keyword
        arguments given here (its own hyperparameters such as `momentum` included).
    **kwargs
        The base Optimizer's arguments (`learning_rate`, `rescale_grad`, `param_idx2name` ...)
        are kept by this wrapper too; the others only reach `default_optimizer`.
    """

    def __init__(self, default_optimizer, **kwargs):
        super().__init__(**self._check_params(**kwargs))
        if isinstance(default_optimizer, str):
            self.default_opt = opt.create(default_optimizer, **kwargs)
        else:
            self.default_opt = default_optimizer
        self.aux_opt = opt.create(_AssignmentOptimizer.__name__)

    @staticmethod
    def _check_params(**kwargs):
        """The subset of `kwargs` that the base Optimizer takes."""
        return {key: value for key, value in kwargs.items() if key in _BASE_PARAMS}

    def _check_index(self, index):
        """The parameter name of `index`: a kvstore key is the name itself, an updater index
        is looked up in idx2name."""
        if index in self.idx2name.values():
            return index
        return self.idx2name[index]

    def _is_full_key(self, name) -> bool:
        return (isinstance(name, str) and name.endswith("_full")
                and name[:-len("_full")] in self.idx2name.values())

    def _route(self, index):
        return self.aux_opt if self._is_full_key(self._check_index(index)) else self.default_opt

    def create_state(self, index, weight):
        return self._route(index).create_state(index, weight)

    def update(self, index, weight, grad, state):
        self._route(index).update(index, weight, grad, state)


# MXNet spells the class with a leading underscore; this public alias is minimod's addition.
SVRGOptimizer = _SVRGOptimizer
