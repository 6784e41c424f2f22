"""`mx.sym.contrib.X`: a node of operator `_contrib_X` (see minimod/ops/namespaces.py)."""
from ..ops.namespaces import module_hooks
from .namespaces import constructor

__getattr__, __dir__ = module_hooks(globals(), "_contrib_", constructor)
