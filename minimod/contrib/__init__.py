"""`mx.contrib`: MXNet 1.9.1's contributed extras that minimod's symbolic stack can run.

- `mx.contrib.sym` / `mx.contrib.symbol` and `mx.contrib.nd` / `mx.contrib.ndarray`: the
  contrib operators (`_contrib_X`), the same namespaces as `mx.sym.contrib` and
  `mx.nd.contrib`;
- `mx.contrib.svrg_optimization`: `SVRGModule` (a Module trained with stochastic
  variance-reduced gradients) and its `_SVRGOptimizer`, matching MXNet's trajectories;
- `mx.contrib.amp`: automatic mixed precision by conversion: `convert_symbol`,
  `convert_model` and `convert_bucketing_module` insert MXNet's float16 casts; `init()`
  (which patches operator functions in MXNet), the Gluon functions and bfloat16 are refused
  with NotImplementedError saying why and what to use (see its docstring);
- `mx.contrib.tensorboard`: `LogMetricsCallback`, writing metrics with a TensorBoard writer
  from PyPI (tensorboardX or mxboard, an optional extra);
- `mx.contrib.onnx`: `import_model` and `get_model_metadata` (ONNX models read back as a
  symbol with parameters) and `export_model`, the older name of `mx.onnx.export_model`;
- `mx.contrib.text`: token counting, Vocabulary and pre-trained token embeddings;
- `mx.contrib.autograd`: MXNet's first autograd interface (`train_section`, `grad_and_loss`
  ...), over the same tape as `mx.autograd`.

Not here: MXNet's `contrib.io` (DataLoaderIter, for Gluon data loaders),
`contrib.onnx.import_to_gluon` (no Gluon) and `contrib.quantization`.
"""
from ..ndarray import contrib as nd
from ..symbol import contrib as sym
from . import amp, autograd, onnx, svrg_optimization, tensorboard, text

ndarray = nd
symbol = sym

__all__ = ["nd", "ndarray", "sym", "symbol", "amp", "autograd", "onnx", "svrg_optimization",
           "tensorboard", "text"]
