"""MXNet's module path `mx.name`: the naming scopes for new symbols (`NameManager`, `Prefix`).

They live with the Symbol builder, in symbol/naming.py; code written for MXNet imports them
from here (`from mxnet.name import Prefix`).
"""
from .symbol.naming import NameManager, Prefix

__all__ = ["NameManager", "Prefix"]
