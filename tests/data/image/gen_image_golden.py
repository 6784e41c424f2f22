"""Write pictures/ (PNG files and an image list) and image_golden.npz: what MXNet 1.9.1's
mx.image gives for the calls of image_cases.py (run with MXNet's Python; the tests only read
the .npz and the pictures):
    OMP_NUM_THREADS=1 /tmp/mxenv/bin/python tests/data/image/gen_image_golden.py
Keys: `<case>/<name>`.
"""
import os
import sys

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from image_cases import CASES, write_pictures  # noqa: E402

write_pictures()

store = {}
for case, fn in CASES.items():
    for name, value in fn(mx).items():
        store["%s/%s" % (case, name)] = value
np.savez_compressed(os.path.join(HERE, "image_golden.npz"), **store)
print("wrote %d arrays" % len(store))
