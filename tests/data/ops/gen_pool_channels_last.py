"""Writes pool_channels_last_golden.npz with MXNet 1.9.1 (run with MXNet's Python, from this
folder): every case of pool_channels_last_cases.py.

    MXNET_STORAGE_FALLBACK_LOG_VERBOSE=0 /path/to/mxnet-venv/bin/python gen_pool_channels_last.py
"""
import mxnet as mx
import numpy as np
from pool_channels_last_cases import run

out = run(mx)
np.savez("pool_channels_last_golden.npz", **out)
print("wrote %d arrays" % len(out))
