"""`mx.operator`: operators written in Python.

- `custom.py`: MXNet's CustomOp API (`CustomOp`, `CustomOpProp`, `register`,
  `mx.sym.Custom`), and the registry queries `get_all_registered_operators` and
  `get_operator_arguments`;
- `custom_node.py`: `Custom`, the graph node's operator, which runs the registered CustomOp;
- `legacy.py`: MXNet 1.x's older `PythonOp`, `NumpyOp` and `NDArrayOp`, adapters over the
  CustomOp machinery.
"""
import ctypes

from ..ndarray.ndarray import NDArray, NDArrayHandle
from . import custom, custom_node, legacy
from .custom import (
    CustomOp,
    CustomOpProp,
    OperatorArguments,
    get_all_registered_operators,
    get_operator_arguments,
    get_registered,
    register,
)
from .legacy import NDArrayOp, NumpyOp, PythonOp

__all__ = ["CustomOp", "CustomOpProp", "register", "get_registered",
           "get_all_registered_operators", "get_operator_arguments", "OperatorArguments",
           "PythonOp", "NumpyOp", "NDArrayOp", "custom", "custom_node", "legacy",
           # names `from mxnet.operator import *` gives MXNet code (its monitor callbacks
           # wrap handles: NDArray(ctypes.cast(arr, NDArrayHandle)))
           "NDArray", "NDArrayHandle", "ctypes"]
