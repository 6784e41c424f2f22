"""Write pooling_same.json: MXNet 1.9.1's 1-D Pooling with pooling_convention='same'.

Run with an MXNet 1.9.1 environment (MXNet's oneDNN kernels refuse some of these windows, so
its reference kernels are used):
    MXNET_MKLDNN_ENABLED=0 python tests/data/ops/gen_pooling_same.py
"""
import json
import os

os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

x = np.random.RandomState(3).randn(2, 3, 10).astype("float32")
cases = []
for kernel, stride in [(3, 2), (3, 1), (2, 3), (4, 1), (5, 3), (2, 2)]:
    for pool_type in ["max", "avg", "sum"]:
        y = mx.nd.Pooling(mx.nd.array(x), kernel=kernel, stride=stride, pad=(0, 0, 0),
                          pool_type=pool_type, pooling_convention="same")
        cases.append(dict(kernel=kernel, stride=stride, pool_type=pool_type,
                          output=y.asnumpy().tolist()))
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pooling_same.json")
with open(out, "w") as f:
    json.dump({"data": x.tolist(), "cases": cases}, f)
