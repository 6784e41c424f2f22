"""Write activation_inplace.json with MXNet 1.9.1 (run with MXNet's Python): each build's
gradients for activation_inplace_cases.py (its oneDNN kernels, then its reference kernels in
a child process with MXNET_MKLDNN_ENABLED=0)."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = "import sys, json; sys.path.insert(0, %r); import mxnet as mx; " \
        "from activation_inplace_cases import run; print(json.dumps(run(mx)))" % HERE


def build(mkldnn: str) -> dict:
    env = dict(os.environ, MXNET_MKLDNN_ENABLED=mkldnn)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


with open(os.path.join(HERE, "activation_inplace.json"), "w") as f:
    json.dump({"onednn": build("1"), "reference": build("0")}, f)
