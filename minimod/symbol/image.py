"""`mx.sym.image.X`: a node of operator `_image_X` (see minimod/ops/namespaces.py)."""
from ..ops.namespaces import module_hooks
from .namespaces import constructor

__getattr__, __dir__ = module_hooks(globals(), "_image_", constructor)
