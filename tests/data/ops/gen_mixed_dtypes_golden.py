"""Write mixed_dtypes_golden.npz: MXNet 1.9.1's numbers where dtypes other than float32 meet.

Run with an MXNet 1.9.1 environment (not needed by the tests):
    MXNET_MKLDNN_ENABLED=0 OMP_NUM_THREADS=1 python tests/data/ops/gen_mixed_dtypes_golden.py
Keys: "unary/<op>/<dtype>" (forward of a unary operator on integer or float16 data),
"unary_grad/<op>/float16" (input gradient through a bound executor), "arange/<i>/<dtype>",
"linspace/<i>/<dtype>", "arange_like/<i>", "mod/<kind>/<out|glhs|grhs>",
"seq/<op>/<out|grad>", "split_v2/<i>/<k>", "like/<op>" (output of a *_like op whose second
input is int32), plus the inputs under "in/...".
"""
import os

os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")  # the reference kernels, not oneDNN's

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

rs = np.random.RandomState(5)
out = {}

UNARY = ["exp", "log", "sqrt", "rsqrt", "cbrt", "rcbrt", "square", "abs", "sign", "round",
         "rint", "floor", "ceil", "trunc", "fix", "negative", "reciprocal", "sigmoid", "tanh",
         "relu", "softsign", "sin", "cos", "degrees", "radians", "gamma", "gammaln", "erf",
         "log1p", "expm1", "arctan", "arcsinh", "cosh", "logical_not"]
INTS = np.array([-7, -1, 0, 1, 2, 5, 9, 100, 50000001])
out["in/int"] = INTS
out["in/uint8"] = np.array([0, 1, 2, 5, 9, 100, 200, 255])
out["in/float16"] = np.linspace(0.1, 6, 40).astype("float16")
for dtype, data in (("int32", INTS), ("int8", INTS[:-1]), ("uint8", out["in/uint8"]),
                    ("float16", out["in/float16"])):
    x = mx.nd.array(data, dtype=dtype)
    for name in UNARY:
        out["unary/%s/%s" % (name, dtype)] = getattr(mx.nd, name)(x).asnumpy()

out["in/float16_head"] = rs.uniform(-2, 2, 40).astype("float16")
for name in ["gamma", "gammaln", "erf", "exp", "sqrt", "sigmoid", "tanh"]:
    v = mx.sym.Variable("x", dtype="float16")
    grad = mx.nd.zeros(40, dtype="float16")
    ex = getattr(mx.sym, name)(v).bind(mx.cpu(), {"x": mx.nd.array(out["in/float16"],
                                                                    dtype="float16")},
                                        args_grad={"x": grad})
    ex.forward(is_train=True)
    ex.backward([mx.nd.array(out["in/float16_head"], dtype="float16")])
    out["unary_grad/%s/float16" % name] = grad.asnumpy()

RANGES = [(10,), (0, 10), (5, 100, 4), (50, -50, -2), (-100, 100, 1), (1.3, 456.6, 1.3),
          (0.5, 10, 0.7), (-3.7, 5, 1.5), (5.9, 1, -1.3)]
for i, cfg in enumerate(RANGES):
    for dtype in ("float32", "float64", "float16", "int32", "int8", "uint8", "int64"):
        out["arange/%d/%s" % (i, dtype)] = mx.nd.arange(*cfg, dtype=dtype).asnumpy()
    out["arange/%d/repeat3" % i] = mx.nd.arange(*cfg, repeat=3, dtype="int32").asnumpy()

SPACES = [(0.5, 5, 7, True), (0.5, 5, 7, False), (-3.3, 5.9, 4, True), (2, 3, 5, True),
          (0.1, 0.9, 1, True), (0.1, 0.9, 1, False)]
for i, (start, stop, num, endpoint) in enumerate(SPACES):
    for dtype in ("float32", "int32", "float64"):
        out["linspace/%d/%s" % (i, dtype)] = mx.nd.linspace(
            start, stop, num, endpoint=endpoint, dtype=dtype).asnumpy()

LIKE_CASES = [(dict(start=1.5, step=0.7), "float32", (2, 3)),
              (dict(start=1.5, step=0.7, repeat=2), "float32", (2, 3)),
              (dict(start=1.5, step=0.7, repeat=2, axis=1), "float32", (2, 3)),
              (dict(start=-2.5, step=1.5, axis=-1), "int32", (2, 5)),
              (dict(start=1.5, step=0.7, axis=-1), "float16", (2, 3)),
              (dict(start=3), "float64", (4,))]
for i, (params, dtype, shape) in enumerate(LIKE_CASES):
    data = mx.nd.ones(shape, dtype=dtype)
    out["arange_like/%d" % i] = mx.nd.contrib.arange_like(data, **params).asnumpy()

# integer mod: forward and (zero) gradients with non-zero integer heads
lhs = np.array([[7, -7, 7, -7, 5, 9], [3, 0, -4, 11, -12, 8]])
rhs = np.array([[2, 2, -2, -2, 3, -4], [5, 3, 3, -5, 5, 7]])
out["in/mod_lhs"], out["in/mod_rhs"] = lhs, rhs
for kind, build, rshape in (("same", lambda a, b: a % b, (2, 6)),
                            ("broadcast", mx.sym.broadcast_mod, (1, 6))):
    a, b = mx.sym.Variable("a", dtype="int32"), mx.sym.Variable("b", dtype="int32")
    r = rhs[:1] if rshape == (1, 6) else rhs
    ga, gb = mx.nd.ones((2, 6), dtype="int32"), mx.nd.ones(rshape, dtype="int32")
    ex = build(a, b).bind(mx.cpu(), {"a": mx.nd.array(lhs, dtype="int32"),
                                     "b": mx.nd.array(r, dtype="int32")},
                          args_grad={"a": ga, "b": gb})
    out["mod/%s/out" % kind] = ex.forward(is_train=True)[0].asnumpy()
    ex.backward([mx.nd.array(np.arange(12).reshape(2, 6), dtype="int32")])
    out["mod/%s/glhs" % kind], out["mod/%s/grhs" % kind] = ga.asnumpy(), gb.asnumpy()

# sequence ops: float32 data, int32 lengths
seq = rs.randn(4, 3, 2).astype("float32")
lengths = np.array([2, 4, 1])
head = rs.randn(4, 3, 2).astype("float32")
out["in/seq"], out["in/seq_len"], out["in/seq_head"] = seq, lengths, head
for name, extra in (("SequenceMask", dict(value=-2.5)), ("SequenceReverse", {}),
                    ("SequenceLast", {})):
    d, l_ = mx.sym.Variable("d"), mx.sym.Variable("l", dtype="int32")
    sym = getattr(mx.sym, name)(d, l_, use_sequence_length=True, **extra)
    grad = mx.nd.zeros((4, 3, 2))
    ex = sym.bind(mx.cpu(), {"d": mx.nd.array(seq), "l": mx.nd.array(lengths, dtype="int32")},
                  args_grad={"d": grad}, grad_req={"d": "write", "l": "null"})
    res = ex.forward(is_train=True)[0]
    out["seq/%s/out" % name] = res.asnumpy()
    ex.backward([mx.nd.array(head[:res.shape[0]] if name != "SequenceLast" else head[0])])
    out["seq/%s/grad" % name] = grad.asnumpy()

# split_v2
data = rs.randn(3, 7, 2).astype("float32")
out["in/split"] = data
for i, (ios, axis) in enumerate((((2, 5), 1), (2, -1), ((1,), 0), ((0, 3), 1), (7, 1))):
    if isinstance(ios, int) and data.shape[axis] % ios:
        continue
    parts = mx.nd.split_v2(mx.nd.array(data), ios, axis=axis)
    parts = parts if isinstance(parts, list) else [parts]
    for k, p in enumerate(parts):
        out["split_v2/%d/%d" % (i, k)] = p.asnumpy()

# *_like ops with an int32 second input
x = mx.nd.array(rs.randn(2, 1, 4))
out["in/like_x"] = x.asnumpy()
out["like/broadcast_like"] = mx.nd.broadcast_like(x, mx.nd.ones((2, 3, 4), dtype="int32")
                                                  ).asnumpy()
out["like/reshape_like"] = mx.nd.reshape_like(x, mx.nd.ones((4, 2), dtype="int32")).asnumpy()
out["like/slice_like"] = mx.nd.slice_like(x, mx.nd.ones((1, 1, 3), dtype="int32")).asnumpy()

np.savez_compressed(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                 "mixed_dtypes_golden.npz"), **out)
print("wrote %d arrays" % len(out))
