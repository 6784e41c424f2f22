"""`mx.mod`: modules, the training API (BaseModule, Module, and the composite modules)."""
from .base_module import BaseModule
from .module import Module

__all__ = ["BaseModule", "Module"]

try:  # the composite modules (bucketing, sequential, python) build on Module
    from .bucketing_module import BucketingModule  # noqa: F401
    from .python_module import PythonLossModule, PythonModule  # noqa: F401
    from .sequential_module import SequentialModule  # noqa: F401
    __all__ += ["BucketingModule", "SequentialModule", "PythonModule", "PythonLossModule"]
except ImportError:  # pragma: no cover - present once those modules are written
    pass
