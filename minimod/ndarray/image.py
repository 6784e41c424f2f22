"""`mx.nd.image.X`: operator `_image_X` run imperatively (see minimod/ops/namespaces.py)."""
from ..ops.namespaces import module_hooks
from .imperative import op_function

__getattr__, __dir__ = module_hooks(globals(), "_image_", lambda short, op: op_function(op))
