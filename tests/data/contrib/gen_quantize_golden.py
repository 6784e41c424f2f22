"""Write quantize_golden.npz: MXNet 1.9.1's `contrib.quantize` and `contrib.dequantize` on the
scenarios of quantize_cases.py.

Run with an MXNet 1.9.1 environment (not needed by the tests), from the repository root:
    OMP_NUM_THREADS=1 python tests/data/contrib/gen_quantize_golden.py
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from quantize_cases import run  # noqa: E402

golden = run(mx)
path = os.path.join(HERE, "quantize_golden.npz")
np.savez_compressed(path + ".tmp.npz", **golden)
os.replace(path + ".tmp.npz", path)
print("wrote %d arrays to %s" % (len(golden), path), flush=True)
