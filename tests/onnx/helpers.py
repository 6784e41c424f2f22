"""Export a symbol, run it in ONNX Runtime, and give both runs' outputs."""
import os

import numpy as np

import minimod as mx
from minimod import onnx as mxonnx


def random_params(sym, inputs: dict, seed: int = 0) -> dict:
    """Random values for every argument and aux state of `sym` not in `inputs` (variances
    positive), as numpy arrays."""
    rng = np.random.RandomState(seed)
    shapes = {k: v.shape for k, v in inputs.items()}
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    names = sym.list_arguments() + sym.list_auxiliary_states()
    params = {}
    for name, shape in zip(names, arg_shapes + aux_shapes):
        if name in inputs or name.endswith("label"):
            continue
        if name.endswith("var"):
            params[name] = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        else:
            params[name] = rng.randn(*shape).astype(np.float32)
    return params


def minimod_forward(sym, inputs: dict, params: dict) -> list:
    arrays = {k: mx.nd.array(v, dtype=v.dtype) for k, v in {**inputs, **params}.items()}
    shapes = {k: v.shape for k, v in inputs.items()}
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    args = {}
    for name, shape in zip(sym.list_arguments(), arg_shapes):
        args[name] = arrays[name] if name in arrays else mx.nd.zeros(shape)
    aux = {k: arrays[k] for k in sym.list_auxiliary_states()}
    ex = sym.bind(mx.cpu(), args, aux_states=aux, grad_req="null")
    return [o.asnumpy() for o in ex.forward(is_train=False)]


def onnx_forward(path: str, inputs: dict) -> list:
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def export_and_run(sym, inputs: dict, params: dict, path: str, **kwargs) -> list:
    mxonnx.export_model(sym, params, [v.shape for v in inputs.values()],
                        [v.dtype for v in inputs.values()], path, **kwargs)
    return onnx_forward(path, inputs)


def export_checkpoint(folder: str, name: str, data_shape: tuple, path: str) -> str:
    """Export the checkpoint `<folder>/<name>-symbol.json` + `-0000.params` (files MXNet
    wrote) from its paths to `path`; returns what export_model returns."""
    return mxonnx.export_model(os.path.join(folder, name + "-symbol.json"),
                               os.path.join(folder, name + "-0000.params"), [data_shape],
                               np.float32, path)
