"""Write det_iter_golden.npz: MXNet 1.9.1's batches for the ImageDetIter configurations of
det_cases.py, and draw_next's first image (run from this folder, with cv2 in the venv):

    OMP_NUM_THREADS=1 /path/to/mxnet-venv/bin/python gen_det_iter_golden.py

Keys: `<case>/<key>` for det_cases.read's keys; `drawn`.
"""
import mxnet as mx
import numpy as np
from det_cases import CASES, drawn, read


def main():
    golden = {}
    for name, build in sorted(CASES.items()):
        it, epochs = build(mx)
        for key, value in read(it, epochs).items():
            golden["%s/%s" % (name, key)] = np.asarray(value)
    golden["drawn"] = drawn(mx)
    np.savez_compressed("det_iter_golden.npz", **golden)


if __name__ == "__main__":
    main()
