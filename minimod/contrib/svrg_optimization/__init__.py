"""`mx.contrib.svrg_optimization`: SVRG training for Module (MXNet 1.9.1's contrib package).

- `svrg_module.SVRGModule`: a Module that keeps a full-gradient snapshot and trains with the
  SVRG gradient rule (see its module docstring for the behaviour kept from MXNet);
- `svrg_optimizer._SVRGOptimizer` (also `SVRGOptimizer`) and `_AssignmentOptimizer`: the
  optimizers SVRGModule installs, registered as '_svrgoptimizer' and '_assignmentoptimizer'.

MXNet's users import `from mxnet.contrib.svrg_optimization.svrg_module import SVRGModule`;
the names are also offered here.
"""
from . import svrg_module, svrg_optimizer
from .svrg_module import SVRGModule
from .svrg_optimizer import SVRGOptimizer, _AssignmentOptimizer, _SVRGOptimizer

__all__ = ["svrg_module", "svrg_optimizer", "SVRGModule", "SVRGOptimizer",
           "_SVRGOptimizer", "_AssignmentOptimizer"]
