"""Write the ONNX export goldens with MXNet 1.9.1 (run with an MXNet venv, from this folder):

    MXNET_SUBGRAPH_BACKEND=NONE /path/to/mxnet-venv/bin/python gen_onnx_golden.py

(oneDNN's layer fusion, on by default, computes the `residual` model wrongly: it hands the
shortcut the convolution's output after BatchNorm and ReLU; docs/compatibility.md.)

For each model of onnx_models.py: NAME-symbol.json and NAME-0000.params (MXNet's checkpoint
files, random parameters) and, in onnx_golden.npz, the input (NAME:data) and MXNet's outputs
of forward(is_train=False) (NAME:out0, NAME:out1 ...).
"""
import mxnet as mx
import numpy as np
from onnx_models import MODELS


def main():
    golden = {}
    for k, (name, build) in enumerate(sorted(MODELS.items())):
        rng = np.random.RandomState(100 + k)
        sym, shapes = build(mx)
        arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
        args, aux = {}, {}
        for arg, shape in zip(sym.list_arguments(), arg_shapes):
            if arg in shapes or arg.endswith("label"):
                continue
            args[arg] = mx.nd.array(rng.randn(*shape) * 0.5)
        for arg, shape in zip(sym.list_auxiliary_states(), aux_shapes):
            low = 0.5 if arg.endswith("var") else -0.5
            aux[arg] = mx.nd.array(rng.uniform(low, low + 1.0, shape))
        data = rng.randint(0, 20, shapes["data"]).astype(np.float32) \
            if name in ("lstm_cells", "fused_lstm") else rng.randn(*shapes["data"])
        bind_args = dict(args, data=mx.nd.array(data))
        for arg, shape in zip(sym.list_arguments(), arg_shapes):
            bind_args.setdefault(arg, mx.nd.zeros(shape))
        ex = sym.bind(mx.cpu(), bind_args, aux_states=aux, grad_req="null")
        outs = ex.forward(is_train=False)
        mx.model.save_checkpoint(name, 0, sym, args, aux)
        golden[name + ":data"] = data.astype(np.float32)
        for i, out in enumerate(outs):
            golden["%s:out%d" % (name, i)] = out.asnumpy()
    np.savez_compressed("onnx_golden.npz", **golden)


if __name__ == "__main__":
    main()
