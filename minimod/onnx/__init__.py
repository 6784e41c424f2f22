"""`mx.onnx`: export a symbol and its parameters as an ONNX model, for inference elsewhere
(ONNX Runtime, TensorRT, other frameworks): the way out of MXNet's file formats.

    mx.onnx.export_model(sym, params, in_shapes=[(1, 3, 224, 224)], in_types=np.float32,
                         onnx_file_path="model.onnx")

takes a Symbol (or `prefix-symbol.json`) and a parameter dict (or `prefix-0000.params`) and
writes the graph that `forward(is_train=False)` computes, at ONNX opset 13. Needs the `onnx`
package (`pip install 'minimod[onnx]'`). `get_operator_support()` lists the operators it
converts; any other operator is refused with its node named. docs/onnx.md has the details.
"""
from .builder import ONNXExportError
from .export import OPSET_VERSION, export_model, get_operator_support

__all__ = ["export_model", "get_operator_support", "ONNXExportError", "OPSET_VERSION"]
