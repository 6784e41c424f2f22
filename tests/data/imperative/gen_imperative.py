"""Writes imperative.npz and imperative.json from MXNet 1.9.1 (run with MXNet's Python):
operators called imperatively, `mx.nd.<op>(...)`, on inputs drawn here from a fixed seed. The
JSON lists each call (inputs by name in the npz, positional parameters, keyword parameters);
the npz holds the inputs and MXNet's outputs. tests/ndarray/test_imperative.py replays them.

    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=1 \
        /path/to/mxnet-venv/bin/python tests/data/imperative/gen_imperative.py
"""
import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# (op, inputs as (shape, low, high[, "int"]), positional parameters, keyword parameters)
U = (-2.0, 2.0)
CASES = [
    ("Activation", [((2, 5), *U)], ["tanh"], {}),
    ("Activation", [((2, 5), *U)], [], {"act_type": "softrelu"}),
    ("BatchNorm", [((2, 3, 2, 2), *U), ((3,), 0.5, 1.5), ((3,), *U), ((3,), *U),
                   ((3,), 0.5, 2.0)], [], {"fix_gamma": False, "eps": 1e-3}),
    ("BlockGrad", [((3, 2), *U)], [], {}),
    ("Cast", [((3, 2), *U)], ["float16"], {}),
    ("Concat", [((2, 3), *U), ((2, 2), *U)], [], {"dim": 1}),
    ("Convolution", [((2, 3, 6, 6), *U), ((4, 3, 3, 3), *U), ((4,), *U)],
     [(3, 3), (2, 2), (1, 1), (1, 1), 4], {}),
    ("Deconvolution", [((1, 2, 3, 3), *U), ((2, 3, 2, 2), *U)], [],
     {"kernel": (2, 2), "stride": (2, 2), "num_filter": 3, "no_bias": True}),
    ("Dropout", [((3, 4), *U)], [0.5], {}),
    ("ElementWiseSum", [((2, 3), *U), ((2, 3), *U), ((2, 3), *U)], [], {}),
    ("Embedding", [((2, 3), 0, 5, "int"), ((5, 4), *U)], [], {"input_dim": 5, "output_dim": 4}),
    ("Flatten", [((2, 3, 2), *U)], [], {}),
    ("FullyConnected", [((3, 5), *U), ((4, 5), *U), ((4,), *U)], [], {"num_hidden": 4}),
    ("FullyConnected", [((3, 2, 5), *U), ((4, 5), *U)], [],
     {"num_hidden": 4, "no_bias": True, "flatten": False}),
    ("InstanceNorm", [((2, 3, 4), *U), ((3,), *U), ((3,), *U)], [], {"eps": 1e-3}),
    ("LRN", [((1, 5, 2, 2), 0.0, 2.0)], [1e-3, 0.75, 2.0, 3], {}),
    ("LayerNorm", [((2, 3, 4), *U), ((4,), *U), ((4,), *U)], [], {}),
    ("LeakyReLU", [((2, 5), *U)], [None, "leaky", 0.3], {}),
    ("LeakyReLU", [((2, 5), *U)], [], {"act_type": "elu", "slope": 0.5}),
    ("LinearRegressionOutput", [((3, 2), *U), ((3, 2), *U)], [], {}),
    ("LogisticRegressionOutput", [((3, 2), *U), ((3, 2), *U)], [], {}),
    ("MAERegressionOutput", [((3, 2), *U), ((3, 2), *U)], [], {}),
    ("MakeLoss", [((3, 2), *U)], [], {}),
    ("Pad", [((1, 2, 2, 3), *U)], [], {"mode": "constant", "constant_value": 1.5,
                                       "pad_width": (0, 0, 0, 0, 1, 1, 2, 0)}),
    ("Pooling", [((1, 2, 4, 4), *U)], [(2, 2), "max"], {"stride": (2, 2)}),
    ("Pooling", [((1, 2, 5, 5), *U)], [], {"kernel": (3, 3), "pool_type": "avg",
                                            "stride": (2, 2), "pad": (1, 1)}),
    ("RNN", [((3, 2, 5), *U), ((176,), -0.5, 0.5), ((1, 2, 4), *U), ((1, 2, 4), *U)],
     [], {"state_size": 4, "num_layers": 1, "mode": "lstm", "state_outputs": True}),
    ("Reshape", [((2, 3, 4), *U)], [(0, -1)], {}),
    ("SequenceLast", [((4, 2, 3), *U)], [], {}),
    ("SequenceMask", [((4, 2, 3), *U), ((2,), 1, 4, "int")], [],
     {"use_sequence_length": True, "value": -1.0}),
    ("SequenceReverse", [((4, 2, 3), *U)], [], {}),
    ("SliceChannel", [((2, 6), *U)], [3], {}),
    ("Softmax", [((3, 4), *U), ((3,), 0, 4, "int")], [], {"grad_scale": 2.0}),
    ("SoftmaxActivation", [((2, 3, 2), *U)], [], {"mode": "channel"}),
    ("SoftmaxOutput", [((3, 4), *U), ((3,), 0, 4, "int")], [], {}),
    ("SwapAxis", [((2, 3, 4), *U)], [0, 2], {}),
    ("arccos", [((7,), -0.99, 0.99)], [], {}),
    ("arccosh", [((7,), 1.01, 5.0)], [], {}),
    ("arcsin", [((7,), -0.99, 0.99)], [], {}),
    ("arcsinh", [((7,), *U)], [], {}),
    ("arctan", [((7,), *U)], [], {}),
    ("arctanh", [((7,), -0.99, 0.99)], [], {}),
    ("argmax_channel", [((3, 4), *U)], [], {}),
    ("broadcast_axes", [((2, 1, 3), *U)], [], {"axis": 1, "size": 4}),
    ("broadcast_axis", [((1, 3), *U)], [0, 2], {}),
    ("broadcast_equal", [((2, 3), -2, 2, "int"), ((1, 3), -2, 2, "int")], [], {}),
    ("broadcast_greater", [((2, 3), *U), ((2, 1), *U)], [], {}),
    ("broadcast_greater_equal", [((2, 3), -2, 2, "int"), ((1, 3), -2, 2, "int")], [], {}),
    ("broadcast_hypot", [((2, 3), *U), ((1, 3), *U)], [], {}),
    ("broadcast_lesser", [((2, 3), *U), ((2, 1), *U)], [], {}),
    ("broadcast_lesser_equal", [((2, 3), -2, 2, "int"), ((1, 3), -2, 2, "int")], [], {}),
    ("broadcast_like", [((1, 3), *U), ((4, 3), *U)], [], {}),
    ("broadcast_logical_and", [((2, 3), -1, 2, "int"), ((1, 3), -1, 2, "int")], [], {}),
    ("broadcast_logical_or", [((2, 3), -1, 2, "int"), ((1, 3), -1, 2, "int")], [], {}),
    ("broadcast_logical_xor", [((2, 3), -1, 2, "int"), ((1, 3), -1, 2, "int")], [], {}),
    ("broadcast_minus", [((2, 3), *U), ((2, 1), *U)], [], {}),
    ("broadcast_mod", [((2, 3), 1.0, 9.0), ((1, 3), 1.0, 3.0)], [], {}),
    ("broadcast_not_equal", [((2, 3), -2, 2, "int"), ((1, 3), -2, 2, "int")], [], {}),
    ("broadcast_plus", [((2, 3), *U), ((2, 1), *U)], [], {}),
    ("broadcast_power", [((2, 3), 0.5, 2.0), ((1, 3), -1.5, 1.5)], [], {}),
    ("cbrt", [((7,), *U)], [], {}),
    ("cosh", [((7,), *U)], [], {}),
    ("crop", [((4, 5), *U)], [(1, 0), (3, 4)], {}),
    ("degrees", [((7,), *U)], [], {}),
    ("erf", [((7,), *U)], [], {}),
    ("fix", [((7,), -3.0, 3.0)], [], {}),
    ("gamma", [((7,), 0.2, 4.0)], [], {}),
    ("gammaln", [((7,), 0.2, 4.0)], [], {}),
    ("identity", [((2, 3), *U)], [], {}),
    ("log10", [((7,), 0.1, 9.0)], [], {}),
    ("log2", [((7,), 0.1, 9.0)], [], {}),
    ("logical_not", [((7,), -1, 2, "int")], [], {}),
    ("make_loss", [((3, 2), *U)], [], {}),
    ("max_axis", [((3, 4), *U)], [1], {}),
    ("min_axis", [((3, 4), *U)], [], {"axis": 0, "keepdims": True}),
    ("nanprod", [((3, 4), 0.5, 1.5)], [], {"axis": 1}),
    ("pad", [((1, 1, 3, 3), *U)], ["edge", (0, 0, 0, 0, 1, 2, 2, 1)], {}),
    ("radians", [((7,), -90.0, 90.0)], [], {}),
    ("reshape_like", [((2, 6), *U), ((3, 4), *U)], [], {}),
    ("reverse", [((3, 4), *U)], [1], {}),
    ("rint", [((7,), -3.0, 3.0)], [], {}),
    ("sinh", [((7,), *U)], [], {}),
    ("slice", [((4, 5), *U)], [(0, 1), (4, 5), (2, 2)], {}),
    ("softmax_cross_entropy", [((3, 4), *U), ((3,), 0, 4, "int")], [], {}),
    ("softsign", [((7,), *U)], [], {}),
    ("stop_gradient", [((3,), *U)], [], {}),
    ("sum_axis", [((3, 4), *U)], [], {"axis": 0}),
    ("tan", [((7,), -1.2, 1.2)], [], {}),
    ("trunc", [((7,), -3.0, 3.0)], [], {}),
    ("_plus_scalar", [((2, 3), *U)], [], {"scalar": 1.5}),
    ("_rminus_scalar", [((2, 3), *U)], [2.0], {}),
    ("_full", [], [], {"shape": (2, 3), "value": 7.0}),
    ("_arange", [], [1.0, 7.0, 2.0], {}),
    ("_eye", [], [3, 4, -1], {}),
    ("_linspace", [], [], {"start": -1.0, "stop": 2.0, "num": 7}),
    ("_linspace", [], [], {"start": 0.0, "stop": 1.0, "num": 4, "endpoint": False}),
]


def main():
    rng = np.random.RandomState(0)
    arrays, calls = {}, []
    for k, (op, inputs, args, kwargs) in enumerate(CASES):
        names = []
        for j, spec in enumerate(inputs):
            shape, low, high = spec[:3]
            if len(spec) > 3:  # integers, stored as float32 (MXNet's default dtype)
                value = rng.randint(low, high, size=shape).astype(np.float32)
            else:
                value = rng.uniform(low, high, size=shape).astype(np.float32)
            names.append("c%d_in%d" % (k, j))
            arrays[names[-1]] = value
        fn = getattr(mx.nd, op, None) or getattr(mx.nd._internal, op)
        nd_inputs = [mx.nd.array(arrays[n]) for n in names]
        result = fn(*nd_inputs, *args, **kwargs)
        results = result if isinstance(result, (list, tuple)) else [result]
        for j, r in enumerate(results):
            arrays["c%d_out%d" % (k, j)] = r.asnumpy()
        calls.append({"op": op, "inputs": names, "args": args, "kwargs": kwargs,
                      "outputs": len(results), "list": isinstance(result, (list, tuple))})
    np.savez_compressed(os.path.join(HERE, "imperative.npz"), **arrays)
    with open(os.path.join(HERE, "imperative.json"), "w") as f:
        json.dump({"mxnet": mx.__version__, "calls": calls}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
