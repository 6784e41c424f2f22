"""`mx.sym.linalg.X`: a node of operator `_linalg_X` (see minimod/ops/namespaces.py)."""
from ..ops.namespaces import module_hooks
from .namespaces import constructor

__getattr__, __dir__ = module_hooks(globals(), "_linalg_", constructor)
