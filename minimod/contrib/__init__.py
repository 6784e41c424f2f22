"""`mx.contrib`: MXNet's contributed extras.

- `mx.contrib.sym` / `mx.contrib.symbol` and `mx.contrib.nd` / `mx.contrib.ndarray`: the
  contrib operators (`_contrib_X`), the same namespaces as `mx.sym.contrib` and
  `mx.nd.contrib`;
- `mx.contrib.amp`: automatic mixed precision (see its docstring for what minimod does).
"""
from ..ndarray import contrib as nd
from ..symbol import contrib as sym
from . import amp

ndarray = nd
symbol = sym

__all__ = ["nd", "ndarray", "sym", "symbol", "amp"]
