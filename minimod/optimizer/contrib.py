"""MXNet's module path `mx.optimizer.contrib`: `GroupAdaGrad` (adaptive.py), the optimizer MXNet
keeps apart from the others; `mx.optimizer.create('groupadagrad')` makes one too."""
from .adaptive import GroupAdaGrad

__all__ = ["GroupAdaGrad"]
