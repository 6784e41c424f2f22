"""Write mobilenet_golden.npz: MXNet 1.9.1's float64 output and gradients of the model-zoo
MobileNet-v2 in mobilenet_v2.py (its reference CPU kernels; run with MXNet's Python):
    MXNET_MKLDNN_ENABLED=0 python tests/data/model/gen_mobilenet_golden.py"""
import os
import sys

os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mobilenet_v2 import run  # noqa: E402

np.savez_compressed(os.path.join(HERE, "mobilenet_golden.npz"), **run(mx))
