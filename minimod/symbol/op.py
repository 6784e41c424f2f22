"""MXNet's module path `mx.sym.op`: every registered operator as a Symbol constructor.

`mx.sym.op.FullyConnected` is `mx.sym.FullyConnected`; private names stay under
`mx.sym._internal`.
"""
import importlib

from ..ops.namespaces import module_hooks

__getattr__, __dir__ = module_hooks(
    globals(), "", lambda short, op_name: getattr(importlib.import_module(__package__), short))
