"""Write image_ops_golden.npz: MXNet 1.9.1's outputs of image_op_cases.py (run from this
folder with an MXNet venv):

    OMP_NUM_THREADS=1 /path/to/mxnet-venv/bin/python gen_image_ops_golden.py
"""
import mxnet as mx
import numpy as np
from image_op_cases import CASES


def main():
    out = {}
    for name, case in sorted(CASES.items()):
        try:
            out[name] = case(mx).asnumpy()
        except Exception as err:  # noqa: BLE001 - recorded: MXNet refuses this call
            print(name, "MXNet refuses:", str(err).splitlines()[-1][:200])
    np.savez_compressed("image_ops_golden.npz", **out)


if __name__ == "__main__":
    main()
