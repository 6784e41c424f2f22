"""Write subclass_calls.json: MXNet 1.9.1's calls into Optimizer subclasses (run with MXNet's
Python: python tests/data/optimizer/gen_subclass_calls.py)."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mxnet as mx  # noqa: E402
from subclass_calls import run  # noqa: E402

with open(os.path.join(HERE, "subclass_calls.json"), "w") as f:
    json.dump(run(mx), f, indent=1, sort_keys=True)
