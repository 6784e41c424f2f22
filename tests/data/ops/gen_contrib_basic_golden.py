"""Write contrib_basic_golden.npz: outputs and input gradients of MXNet 1.9.1's general-purpose
contrib operators (isinf, isnan, isfinite, allclose, div_sqrt_dim, quadratic, index_copy,
boolean_mask, index_array, AdaptiveAvgPooling2D, BilinearResize2D, the interleaved attention
products) and of all_finite, multi_all_finite, amp_cast, amp_multicast, _histogram,
_ravel_multi_index, _unravel_index and _image_normalize.

Run with an MXNet 1.9.1 environment (not needed by the tests):
    OMP_NUM_THREADS=1 python tests/data/ops/gen_contrib_basic_golden.py
Each case stores its inputs, the op's registered name and attrs (JSON), every visible output,
one head gradient per visible output (in that output's dtype) and the gradients of the
differentiated inputs.
"""
import json
import os

os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")  # the reference kernels, not oneDNN's

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

rs = np.random.RandomState(5)


def r(*shape, dtype="float32"):
    return rs.randn(*shape).astype(dtype)


def f32(rows):
    return np.array(rows, dtype="float32")


SPECIAL = f32([[1.0, np.inf, -2.0], [np.nan, -np.inf, 0.0]])

# name: (registered op, attrs, [inputs], differentiate inputs)
CASES = {
    "isinf": ("_contrib_isinf", dict(), [SPECIAL], []),
    "isnan": ("_contrib_isnan", dict(), [SPECIAL], []),
    "isfinite": ("_contrib_isfinite", dict(), [SPECIAL.astype("float64")], []),
    "allclose_true": ("_contrib_allclose", dict(rtol=1e-3, atol=1e-4),
                      [f32([1.0, 2.0, np.nan]), f32([1.0005, 2.0, np.nan])], []),
    "allclose_nan_false": ("_contrib_allclose", dict(equal_nan=False),
                           [f32([1.0, np.nan]), f32([1.0, np.nan])], []),
    "div_sqrt_dim": ("_contrib_div_sqrt_dim", dict(), [r(2, 3, 5)], [0]),
    "quadratic": ("_contrib_quadratic", dict(a=0.7, b=-1.2, c=0.3), [r(3, 4)], [0]),
    "index_copy": ("_contrib_index_copy", dict(),
                   [r(5, 3), f32([0, 4, 2]), r(3, 3)], [0, 2]),
    "boolean_mask": ("_contrib_boolean_mask", dict(), [r(4, 3), f32([0, 1, 0, 2])], [0]),
    "index_array_axes": ("_contrib_index_array", dict(axes=(1, -3)), [r(2, 3, 2)], []),
    "adaptive_pool": ("_contrib_AdaptiveAvgPooling2D", dict(output_size=(3, 4)),
                      [r(2, 3, 7, 9)], [0]),
    "adaptive_pool_up": ("_contrib_AdaptiveAvgPooling2D", dict(output_size=5),
                         [r(1, 2, 4, 6)], [0]),
    "adaptive_pool_global": ("_contrib_AdaptiveAvgPooling2D", dict(), [r(1, 2, 3, 5)], [0]),
    "bilinear_size": ("_contrib_BilinearResize2D", dict(height=5, width=9),
                      [r(1, 2, 4, 6)], [0]),
    "bilinear_size_unaligned": ("_contrib_BilinearResize2D",
                                dict(height=7, width=4, align_corners=False),
                                [r(2, 1, 4, 6)], [0]),
    "bilinear_scale": ("_contrib_BilinearResize2D", dict(scale_height=1.7, scale_width=0.6),
                       [r(1, 2, 5, 7)], [0]),
    "bilinear_odd_scale": ("_contrib_BilinearResize2D",
                           dict(scale_height=0.5, scale_width=2.5, mode="odd_scale",
                                align_corners=False), [r(2, 1, 7, 8)], [0]),
    "bilinear_to_even_up": ("_contrib_BilinearResize2D", dict(mode="to_even_up"),
                            [r(1, 2, 5, 6)], [0]),
    "bilinear_to_odd_down": ("_contrib_BilinearResize2D", dict(mode="to_odd_down"),
                             [r(1, 2, 5, 6)], [0]),
    "bilinear_like": ("_contrib_BilinearResize2D", dict(mode="like", align_corners=False),
                      [r(1, 2, 5, 6), r(3, 1, 3, 9)], [0, 1]),
    "bilinear_one_pixel": ("_contrib_BilinearResize2D",
                           dict(height=1, width=1, align_corners=False), [r(1, 1, 4, 5)], [0]),
    "selfatt_qk": ("_contrib_interleaved_matmul_selfatt_qk", dict(heads=3),
                   [r(4, 2, 18)], [0]),
    "selfatt_valatt": ("_contrib_interleaved_matmul_selfatt_valatt", dict(heads=3),
                       [r(4, 2, 18), r(6, 4, 4)], [0, 1]),
    "encdec_qk": ("_contrib_interleaved_matmul_encdec_qk", dict(heads=3),
                  [r(3, 2, 6), r(5, 2, 12)], [0, 1]),
    "encdec_valatt": ("_contrib_interleaved_matmul_encdec_valatt", dict(heads=3),
                      [r(5, 2, 12), r(6, 3, 5)], [0, 1]),
    "all_finite": ("all_finite", dict(), [SPECIAL], []),
    "all_finite_ok": ("all_finite", dict(), [r(2, 3)], []),
    "multi_all_finite": ("multi_all_finite", dict(num_arrays=2), [r(2, 2), SPECIAL], []),
    "amp_cast": ("amp_cast", dict(dtype="float16"), [r(2, 3)], [0]),
    "amp_cast_int": ("amp_cast", dict(dtype="float16"), [np.arange(4, dtype="int32")], []),
    "amp_multicast": ("amp_multicast", dict(num_outputs=3),
                      [r(2, 2, dtype="float16"), r(3), np.arange(2, dtype="int32")], [0, 1]),
    "amp_multicast_narrow": ("amp_multicast", dict(num_outputs=2, cast_narrow=True),
                             [r(2, dtype="float16"), r(3)], [0, 1]),
    "histogram_range": ("_histogram", dict(bin_cnt=5, range=(-1.0, 1.5)),
                        [r(3, 7)], []),
    "histogram_bins": ("_histogram", dict(), [r(20), f32([-1.0, -0.2, 0.0, 0.5, 2.0])], []),
    "histogram_int": ("_histogram", dict(bin_cnt=4, range=(0.5, 9.5)),
                      [np.arange(10, dtype="int32")], []),
    "ravel": ("_ravel_multi_index", dict(shape=(3, 4, 5)),
              [f32([[0, 2, 1, 2.7], [3, 0, 1, 3], [4, 1, 0, 2]])], []),
    "unravel": ("_unravel_index", dict(shape=(-1, 4, 5)), [f32([0, 7, 59, 61, 13.5])], []),
    "image_normalize": ("_image_normalize", dict(mean=(0.1, 0.2, 0.3), std=(0.5, 2.0, 1.0)),
                        [r(2, 3, 4, 5)], [0]),
    "image_normalize_gray": ("_image_normalize", dict(mean=0.5, std=2.0), [r(1, 4, 4)], [0]),
}


def op_function(op):
    """MXNet's frontend function of a registered operator (isinf & co. are Python ones)."""
    for prefix, namespace in (("_contrib_", mx.nd.contrib), ("_image_", mx.nd.image)):
        if op.startswith(prefix):
            return getattr(namespace, op[len(prefix):])
    return getattr(mx.nd, op, None) or getattr(mx.nd._internal, op)


def run(op, attrs, inputs, wrt):
    args = [mx.nd.array(a, dtype=a.dtype) for a in inputs]
    for i in wrt:
        args[i].attach_grad()
    with mx.autograd.record():
        outs = op_function(op)(*args, **attrs)
    outs = outs if isinstance(outs, list) else [outs]
    heads = [rs.uniform(-1, 1, o.shape).astype(o.dtype) for o in outs]
    if wrt:
        mx.autograd.backward(outs, [mx.nd.array(h, dtype=h.dtype) for h in heads])
    return [o.asnumpy() for o in outs], heads, [args[i].grad.asnumpy() for i in wrt]


def main():
    store = {}
    for name, (op, attrs, inputs, wrt) in CASES.items():
        outs, heads, grads = run(op, attrs, inputs, wrt)
        store[name + "/meta"] = np.array(json.dumps(dict(op=op, attrs=attrs, wrt=wrt,
                                                         n_in=len(inputs), n_out=len(outs))))
        for i, a in enumerate(inputs):
            store["%s/in%d" % (name, i)] = a
        for i, (o, h) in enumerate(zip(outs, heads)):
            store["%s/out%d" % (name, i)] = o
            store["%s/head%d" % (name, i)] = h
        for i, g in zip(wrt, grads):
            store["%s/grad%d" % (name, i)] = g
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "contrib_basic_golden.npz")
    np.savez_compressed(path, **store)
    print("wrote", path, len(CASES), "cases")


if __name__ == "__main__":
    main()
