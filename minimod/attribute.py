"""MXNet's module path `mx.attribute`: `AttrScope`, the attributes new symbols get inside a
`with` block. It lives with the Symbol builder, in symbol/naming.py."""
from .symbol.naming import AttrScope

__all__ = ["AttrScope"]
