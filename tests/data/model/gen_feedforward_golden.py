"""Writes feedforward_golden.npz from MXNet 1.9.1 (run with MXNet's Python):

    OMP_NUM_THREADS=1 /path/to/mxnet-venv/bin/python tests/data/model/gen_feedforward_golden.py
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import feedforward_cases  # noqa: E402

if __name__ == "__main__":
    import mxnet as mx
    store = {}
    for name, epoch_size in (("plain", None), ("epoch_size", 4)):
        for key, value in feedforward_cases.run(mx, epoch_size).items():
            store["%s/%s" % (name, key)] = value
    np.savez_compressed(os.path.join(HERE, "feedforward_golden.npz"), **store)
    print("wrote", len(store), "arrays")
