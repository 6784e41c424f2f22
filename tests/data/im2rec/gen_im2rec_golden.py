"""Write im2rec_golden.npz: what MXNet 1.9.1's tools/im2rec.py makes of tree.py's folder.

Run with an MXNet 1.9.1 environment with OpenCV (not needed by the tests), from the root:
    python tests/data/im2rec/gen_im2rec_golden.py
Each run (tree.RUNS) is a list of command lines; the npz keeps every .lst file's text and, for each
.rec, its records' headers, payload lengths and decoded pixels, and the .idx text.
"""
import glob
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cv2  # noqa: E402
import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from tree import RUNS, build  # noqa: E402


def run(script, name, root, out):
    prefix = os.path.join(out, name, "data")
    os.makedirs(os.path.dirname(prefix))
    for argv in RUNS[name]:
        argv = [prefix if a == "P" else root if a == "R" else a for a in argv]
        subprocess.run([sys.executable, script] + argv, check=True, capture_output=True)
    results = {}
    for path in sorted(glob.glob(prefix + "*.lst")):
        results["%s/%s" % (name, os.path.basename(path))] = np.array(open(path).read())
    for path in sorted(glob.glob(prefix + "*.rec")):
        base = "%s/%s" % (name, os.path.basename(path))
        reader = mx.recordio.MXRecordIO(path, "r")
        heads, lengths, pixels = [], [], []
        while True:
            s = reader.read()
            if s is None:
                break
            header, payload = mx.recordio.unpack(s)
            heads.append([header.flag, float(np.ravel(header.label)[0]), header.id, header.id2])
            lengths.append(len(payload))
            if name != "through":
                pixels.append(cv2.imdecode(np.frombuffer(payload, np.uint8),
                                           cv2.IMREAD_UNCHANGED).ravel())
        results[base + "/headers"] = np.array(heads)
        results[base + "/lengths"] = np.array(lengths)
        if pixels:
            results[base + "/pixels"] = np.concatenate(pixels)
        results[base + "/idx"] = np.array(open(path[:-4] + ".idx").read())
    return results


def main():
    script = mx.test_utils.get_im2rec_path()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = build(os.path.join(tmp, "images"))
        for name in RUNS:
            results.update(run(script, name, root, os.path.join(tmp, "out")))
    path = os.path.join(HERE, "im2rec_golden.npz")
    np.savez_compressed(path + ".tmp.npz", **results)
    os.replace(path + ".tmp.npz", path)
    print("wrote %d arrays to %s" % (len(results), path))


if __name__ == "__main__":
    main()
