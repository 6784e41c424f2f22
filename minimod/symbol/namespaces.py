"""The symbol side of MXNet's prefixed-operator namespaces (`mx.sym.contrib`, `mx.sym.linalg`,
`mx.sym.image`; see minimod/ops/namespaces.py). The node is named from the short name
(`mx.sym.linalg.gemm2(a, b)` is `gemm20`), as in MXNet; its JSON records the operator's
registered name (`_linalg_gemm2`)."""
from __future__ import annotations

from .symbol import make_op_symbol

__all__ = ["constructor"]


def constructor(short: str, op_name: str):
    """`mx.sym.<ns>.<short>`: build a node of operator `op_name`."""
    def create(*args, **kwargs):
        return make_op_symbol(op_name, args, kwargs, hint=short.lower())
    create.__name__ = create.__qualname__ = short
    create.__doc__ = "Apply operator %s (see minimod.ops)." % op_name
    return create
