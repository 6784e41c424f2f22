"""Write np_shape_golden.json and the two saved files: MXNet 1.9.1's results for cases.py.

Run with an MXNet 1.9.1 environment (not needed by the tests), from the repository root:
    OMP_NUM_THREADS=1 python tests/data/np_shape/gen_np_shape_golden.py
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mxnet as mx  # noqa: E402
from cases import bound, imperative, infer, json_attrs, saved, zero_batch  # noqa: E402

golden = {
    "infer_legacy": infer(mx, False),
    "infer_np": infer(mx, True),
    "json": json_attrs(mx),
    "imperative": imperative(mx),
    "bound": bound(mx),
    "saved": saved(mx, os.path.join(HERE, "saved")),
    "zero_batch": zero_batch(mx),
}
path = os.path.join(HERE, "np_shape_golden.json")
with open(path + ".tmp", "w") as handle:
    json.dump(golden, handle, indent=1, sort_keys=True)
os.replace(path + ".tmp", path)
print("wrote", path, flush=True)  # MXNet 1.9.1 may crash at exit after zero-size arrays
