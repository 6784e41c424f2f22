"""Write autograd_golden.npz: MXNet 1.9.1's results for the scenarios of scenarios.py.

Run with an MXNet 1.9.1 environment (not needed by the tests), from the repository root:
    OMP_NUM_THREADS=1 python tests/data/autograd/gen_autograd_golden.py
"""
import os
import sys

# oneDNN stays on: with MXNET_MKLDNN_ENABLED=0, MXNet 1.9.1's own CPU RNN kernel fails an
# imperative LSTM's backward ("in_data.size() == num_inputs (4 vs. 3)")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from scenarios import INPUTS, SCENARIOS  # noqa: E402

results = {}
for name, scenario in SCENARIOS.items():
    for key, value in scenario(mx, INPUTS[name]).items():
        results["%s/%s" % (name, key)] = value
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "autograd_golden.npz")
np.savez_compressed(path + ".tmp.npz", **results)
os.replace(path + ".tmp.npz", path)
print("wrote %d arrays to %s" % (len(results), path))
