"""Optimizers and the Updater (`mx.optimizer`, also reachable as `mx.optimizer.optimizer`).

    base.py       Optimizer: hyperparameters, registry (`register`, `create`), lr/wd lookup and
                  multipliers, update counts, float32 master copies; `_Builtin`, the driver of
                  the built-in optimizers (what they share with MXNet, and where they bend)
    sgd.py        SGD, ccSGD, NAG, LARS, LBSGD, Signum, SGLD, DCASGD, Test; SGD's flat-buffer path
    adaptive.py   Adam, Adamax, Nadam, LAMB, FTML, AdaGrad, GroupAdaGrad, AdaDelta, RMSProp, Ftrl
    updater.py    Updater, get_updater; the flat states and `flat_capable` of the fused
                  update over whole parameter buffers (that step is `minimod.flat`)
    contrib.py    MXNet's module path of GroupAdaGrad
    states.py     optimizer states as bytes: minimod's pickle-free format, MXNet's pickles read
                  through SafeStatesUnpickler, dump_states_mxnet

The kernels MXNet's optimizers call (`mx.nd.sgd_mom_update`, `adam_update` ...) are NDArray
functions of `minimod.ndarray` (update_kernels.py); the built-in optimizers run their arithmetic
(ndarray/update_steps*.py), and this package re-exports them (`UPDATE_KERNELS`).
"""
import sys

# Every name the single-module `minimod.optimizer` offered is still here: the classes and
# functions of the modules below, and the names of its namespace that MXNet's has too.
from ..base import MXNetError  # noqa: F401
from ..lr_scheduler import LRScheduler  # noqa: F401
from ..ndarray.ndarray import NDArray, zeros  # noqa: F401
from ..ndarray.update_kernels import (  # noqa: F401
    UPDATE_KERNELS,
    adam_update,
    ftrl_update,
    nag_mom_update,
    rmsprop_update,
    rmspropalex_update,
    sgd_mom_update,
    sgd_update,
    signsgd_update,
    signum_update,
)
from . import contrib  # noqa: F401 - MXNet keeps GroupAdaGrad in mx.optimizer.contrib
from .adaptive import (  # noqa: F401
    FTML,
    LAMB,
    AdaDelta,
    AdaGrad,
    Adam,
    Adamax,
    Ftrl,
    GroupAdaGrad,
    Nadam,
    RMSProp,
)
from .base import Optimizer, State, create, register  # noqa: F401
from .sgd import DCASGD, LARS, LBSGD, NAG, SGD, SGLD, Signum, Test, ccSGD  # noqa: F401
from .states import SafeStatesUnpickler, UnsafeStatesError, dump_states_mxnet, load_states
from .updater import Updater, get_updater

__all__ = [
    "AdaDelta", "AdaGrad", "Adam", "Adamax", "Ftrl", "NAG", "Nadam", "Optimizer", "RMSProp",
    "SGD", "Signum", "Test", "Updater", "ccSGD", "create", "get_updater", "register",
    "SafeStatesUnpickler", "UnsafeStatesError", "dump_states_mxnet", "load_states",
]

# MXNet code imports `mx.optimizer.optimizer` (as an attribute or a module); this package
# serves both names.
optimizer = sys.modules[__name__]
sys.modules[__name__ + ".optimizer"] = optimizer
