"""`mx.mod`: modules, the training API (BaseModule, Module, and the composite modules)."""
from . import executor_group  # noqa: F401 - MXNet's path of DataParallelExecutorGroup
from .base_module import BaseModule
from .module import Module

__all__ = ["BaseModule", "Module"]


def _missing(err: ModuleNotFoundError, submodule: str) -> bool:
    """True when the composite module's file itself is absent (not when it fails to import)."""
    return err.name == "%s.%s" % (__name__, submodule)


# the composite modules build on Module; each is imported on its own so that one not yet
# written does not hide the others, while an error inside a present file still surfaces
try:
    from .bucketing_module import BucketingModule  # noqa: F401
    __all__ += ["BucketingModule"]
except ModuleNotFoundError as err:  # pragma: no cover - present once it is written
    if not _missing(err, "bucketing_module"):
        raise

try:
    from .sequential_module import SequentialModule  # noqa: F401
    __all__ += ["SequentialModule"]
except ModuleNotFoundError as err:  # pragma: no cover
    if not _missing(err, "sequential_module"):
        raise

try:
    from .python_module import PythonLossModule, PythonModule  # noqa: F401
    __all__ += ["PythonModule", "PythonLossModule"]
except ModuleNotFoundError as err:  # pragma: no cover
    if not _missing(err, "python_module"):
        raise
