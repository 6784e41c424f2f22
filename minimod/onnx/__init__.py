"""`mx.onnx`: a symbol and its parameters written as an ONNX model for inference elsewhere
(ONNX Runtime, TensorRT, other frameworks), the way out of MXNet's file formats; and ONNX
models read back as a symbol with parameters (`mx.contrib.onnx.import_model`, also here).

    mx.onnx.export_model(sym, params, in_shapes=[(1, 3, 224, 224)], in_types=np.float32,
                         onnx_file_path="model.onnx")
    sym, arg_params, aux_params = mx.contrib.onnx.import_model("model.onnx")

Export writes the graph that `forward(is_train=False)` computes, at ONNX opset 13. Both need
the `onnx` package (`pip install 'minimod[onnx]'`). `get_operator_support()` lists the
operators export converts; anything else is refused with its node named. docs/onnx.md has
the details.
"""
from .builder import ONNXExportError, ONNXImportError
from .export import OPSET_VERSION, export_model, get_operator_support
from .importer import get_model_metadata, import_model

__all__ = ["export_model", "get_operator_support", "import_model", "get_model_metadata",
           "ONNXExportError", "ONNXImportError", "OPSET_VERSION"]
