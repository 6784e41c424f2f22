"""`mx.contrib.onnx`: MXNet 1.9.1's ONNX importers, and the older path of the exporter.

`import_model(model_file)` gives (sym, arg_params, aux_params) and `get_model_metadata` the
names and shapes of the graph's inputs and outputs (minimod.onnx.importer);
`export_model` is `mx.onnx.export_model` (with MXNet's notice that the path moved, as a
DeprecationWarning). `import_to_gluon` needs Gluon, which minimod does not implement.
"""
from __future__ import annotations

import warnings

from ..base import MXNetError
from ..onnx import export as _export
from ..onnx import importer as _importer

__all__ = ["import_model", "get_model_metadata", "import_to_gluon", "export_model"]


def import_model(model_file) -> tuple:
    """(sym, arg_params, aux_params) of an ONNX model file."""
    return _importer.import_model(model_file)


def get_model_metadata(model_file) -> dict:
    """The input and output names and shapes of an ONNX model file."""
    return _importer.get_model_metadata(model_file)


def import_to_gluon(model_file, ctx):
    """MXNet builds a Gluon SymbolBlock here; minimod has no Gluon."""
    raise MXNetError("import_to_gluon builds a Gluon block, and minimod implements the "
                     "symbolic API only: use mx.contrib.onnx.import_model(%r) and bind the "
                     "symbol with mx.mod.Module" % (model_file,))


def export_model(*args, **kwargs) -> str:
    """`mx.onnx.export_model` under its pre-1.9 name."""
    warnings.warn("mx.contrib.onnx.export_model moved to mx.onnx.export_model",
                  DeprecationWarning, stacklevel=2)
    return _export.export_model(*args, **kwargs)
