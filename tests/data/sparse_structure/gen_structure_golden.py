"""Writes structure_golden.npz with MXNet 1.9.1 (run with MXNet's Python, from this folder):
every case of cases.py.

    MXNET_STORAGE_FALLBACK_LOG_VERBOSE=0 /path/to/mxnet-venv/bin/python gen_structure_golden.py
"""
import mxnet as mx
import numpy as np
from cases import run

out = run(mx)
np.savez("structure_golden.npz", **out)
print("wrote %d arrays" % len(out))
