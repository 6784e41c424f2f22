"""`mx.contrib.onnx`: MXNet 1.9.1's older path to ONNX. `export_model` is `mx.onnx.export_model`
(with MXNet's notice that the path moved, as a DeprecationWarning)."""
from __future__ import annotations

import warnings

__all__ = ["export_model"]


def export_model(*args, **kwargs) -> str:
    """`mx.onnx.export_model` under its pre-1.9 name."""
    warnings.warn("mx.contrib.onnx.export_model moved to mx.onnx.export_model",
                  DeprecationWarning, stacklevel=2)
    from ..onnx import export_model as export
    return export(*args, **kwargs)
