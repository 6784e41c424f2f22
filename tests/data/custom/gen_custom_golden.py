"""Writes custom_golden.npz: custom_cases.run under MXNet 1.9.1 (run with MXNet's Python):

    OMP_NUM_THREADS=1 /path/to/mxnet-venv/bin/python tests/data/custom/gen_custom_golden.py
"""
import os
import sys

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import custom_cases  # noqa: E402

np.savez_compressed(os.path.join(HERE, "custom_golden.npz"), **custom_cases.run(mx))
