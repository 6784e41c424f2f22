"""Write text_golden.json and text_golden.npz: MXNet 1.9.1's results of text_cases.py (run
from this folder with an MXNet venv):

    /path/to/mxnet-venv/bin/python gen_text_golden.py
"""
import json

import mxnet as mx
import numpy as np
from text_cases import CASES


def main():
    values, arrays = {}, {}
    for name, case in sorted(CASES.items()):
        out = case(mx)
        if isinstance(out, mx.nd.NDArray):
            arrays[name] = out.asnumpy()
        else:
            values[name] = out
    with open("text_golden.json", "w") as f:
        json.dump(values, f, indent=1, sort_keys=True)
    np.savez_compressed("text_golden.npz", **arrays)


if __name__ == "__main__":
    main()
