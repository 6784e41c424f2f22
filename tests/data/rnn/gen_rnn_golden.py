"""Write rnn_golden.json / rnn_golden.npz with MXNet 1.9.1 (run with MXNet's venv):

    OMP_NUM_THREADS=1 /tmp/mxenv/bin/python tests/data/rnn/gen_rnn_golden.py

For every case of rnn_cases.py: the symbol JSON, argument/output/aux names, inferred shapes,
and (for deterministic graphs) forward outputs and all argument gradients of a training pass
with fixed arguments and head gradients.
"""
import json
import os
import sys
import warnings

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rnn_cases  # noqa: E402


def main():
    meta = {}
    arrays = {}
    for name in rnn_cases.CASES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sym, shapes, numbers = rnn_cases.build(mx, name)
        arg_shapes, out_shapes, aux_shapes = sym.infer_shape(**shapes)
        meta[name] = {
            "json": sym.tojson(),
            "arguments": sym.list_arguments(),
            "outputs": sym.list_outputs(),
            "aux": sym.list_auxiliary_states(),
            "arg_shapes": [list(s) for s in arg_shapes],
            "out_shapes": [list(s) for s in out_shapes],
            "numbers": numbers,
        }
        if not numbers:
            continue
        values = rnn_cases.arg_values(sym, arg_shapes, seed=len(name))
        exe = sym.simple_bind(mx.cpu(), grad_req="write", **shapes)
        for k, v in values.items():
            exe.arg_dict[k][:] = v
        exe.forward(is_train=True)
        heads = rnn_cases.head_grads(out_shapes, seed=len(name))
        exe.backward([mx.nd.array(h) for h in heads])
        for i, o in enumerate(exe.outputs):
            arrays["%s/out/%d" % (name, i)] = o.asnumpy()
        for k in sym.list_arguments():
            arrays["%s/grad/%s" % (name, k)] = exe.grad_dict[k].asnumpy()
    with open(os.path.join(HERE, "rnn_golden.json"), "w") as f:
        json.dump({"mxnet_version": mx.__version__, "cases": meta}, f, indent=1, sort_keys=True)
    np.savez_compressed(os.path.join(HERE, "rnn_golden.npz"), **arrays)
    print("wrote %d cases, %d arrays" % (len(meta), len(arrays)))


if __name__ == "__main__":
    main()
