"""Writes sparse_module_golden.npz with MXNet 1.9.1 (run with MXNet's Python, from this
folder): the parameters after Module training of each case of cases.py.

    MXNET_STORAGE_FALLBACK_LOG_VERBOSE=0 /path/to/mxnet-venv/bin/python gen_sparse_module_golden.py
"""
import mxnet as mx
import numpy as np
from cases import CASES, run

out = {}
for name in CASES:
    out.update(run(mx, name))
np.savez("sparse_module_golden.npz", **out)
print("wrote %d arrays" % len(out))
