"""Write sparse_grad_golden.npz: MXNet 1.9.1's tables for sparse_grad_cases.CASES.

Run with an MXNet 1.9.1 environment (not needed by the tests), from the repository root:
    OMP_NUM_THREADS=1 python tests/data/module/gen_sparse_grad_golden.py
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from sparse_grad_cases import CASES, train  # noqa: E402

golden = {"case%d" % k: train(mx, name, params) for k, (name, params) in enumerate(CASES)}
golden["wide"] = train(mx, "adam", {"learning_rate": 0.1, "wd": 0.1}, wide=True)
golden["in_store"] = train(mx, "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.1},
                           devices=2, wide=True, in_store=True)
path = os.path.join(HERE, "sparse_grad_golden.npz")
np.savez_compressed(path + ".tmp.npz", **golden)
os.replace(path + ".tmp.npz", path)
print("wrote %d tables to %s" % (len(golden), path), flush=True)
