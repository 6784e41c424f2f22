"""MXNet's module path `mx.nd.op`: every registered operator as an imperative function.

`mx.nd.op.FullyConnected` is `mx.nd.FullyConnected` (code generated for MXNet imports the
operators from here); private names stay under `mx.nd._internal`.
"""
import importlib

from ..ops.namespaces import module_hooks

__getattr__, __dir__ = module_hooks(
    globals(), "", lambda short, op_name: getattr(importlib.import_module(__package__), short))
