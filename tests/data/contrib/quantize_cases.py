"""Quantize / quantize_v2 / dequantize / requantize scenarios run alike by MXNet 1.9.1
(gen_quantize_golden.py) and minimod (tests/ops/test_quantize.py): random data, values on the
rounding ties, ranges that are symmetric, one-sided, narrower than the data and negative,
with and without calibration ranges."""
import numpy as np

RANGES = [(-1.0, 1.0), (-3.0, 2.0), (0.25, 0.75), (-0.5, -0.25), (0.0, 6.0), (-1e-3, 2e-3)]


def data():
    rng = np.random.RandomState(4)
    x = rng.uniform(-4, 4, 3000).astype(np.float32)
    ties = (np.arange(-300, 301, dtype=np.float32) + 0.5) / 127.0  # near x * 127 = k + 0.5
    return np.concatenate([x, ties, np.float32([0, -0.0, 3, -3, 1e-8])]).astype(np.float32)


def run(mx) -> dict:
    out = {}
    x = mx.nd.array(data())
    codes = {"int8": mx.nd.array(np.arange(-128, 128), dtype="int8"),
             "uint8": mx.nd.array(np.arange(256), dtype="uint8")}
    for k, (lo, hi) in enumerate(RANGES):
        lo_nd, hi_nd = mx.nd.array([lo]), mx.nd.array([hi])
        for kind in ("int8", "uint8"):
            q, qmin, qmax = mx.nd.contrib.quantize(x, lo_nd, hi_nd, out_type=kind)
            out["q%d_%s" % (k, kind)] = q.asnumpy()
            out["q%d_%s_range" % (k, kind)] = np.concatenate([qmin.asnumpy(), qmax.asnumpy()])
            back = mx.nd.contrib.dequantize(codes[kind], lo_nd, hi_nd)
            out["dq%d_%s" % (k, kind)] = back.asnumpy()
    rng = np.random.RandomState(5)
    int32 = mx.nd.array((rng.uniform(-1, 1, 3000) * 2e9).astype(np.int32), dtype="int32")
    for kind in ("int8", "uint8", "auto"):
        calibrations = {"own": {}, "calib": {"min_calib_range": -1.0, "max_calib_range": 1.5},
                        "calib_pos": {"min_calib_range": 0.5, "max_calib_range": 1.5}}
        for label, calib in calibrations.items():
            for name, result in (
                    ("q2", mx.nd.contrib.quantize_v2(x, out_type=kind, **calib)),
                    ("q2abs", mx.nd.contrib.quantize_v2(mx.nd.abs(x), out_type=kind, **calib)),
                    ("rq", mx.nd.contrib.requantize(int32, mx.nd.array([-8.0]),
                                                    mx.nd.array([8.0]), out_type=kind,
                                                    **calib))):
                key = "%s_%s_%s" % (name, kind, label)
                out[key] = result[0].asnumpy()
                out[key + "_range"] = np.concatenate([result[1].asnumpy(),
                                                      result[2].asnumpy()])
    return out
