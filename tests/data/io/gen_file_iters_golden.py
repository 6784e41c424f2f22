"""Writes file_iters_golden.json: what MXNet 1.9.1's CSVIter, MNISTIter and LibSVMIter give on
the small files in files/ (written here too, deterministically). Run with MXNet's Python:

    /path/to/mxnet-venv/bin/python tests/data/io/gen_file_iters_golden.py

tests/test_io_files.py runs the same SCENARIOS under minimod and compares batch by batch.
"""
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "files")

# (name, iterator, keyword arguments with file names relative to files/, epochs)
SCENARIOS = [
    ("csv_round", "CSVIter", dict(data_csv="data.csv", data_shape=(2, 3), label_csv="label.csv",
                                  batch_size=4), 3),
    ("csv_no_round", "CSVIter", dict(data_csv="data.csv", data_shape=(2, 3),
                                     label_csv="label.csv", batch_size=4, round_batch=False), 2),
    ("csv_no_label", "CSVIter", dict(data_csv="data.csv", data_shape=(6,), batch_size=3), 1),
    ("csv_label_2", "CSVIter", dict(data_csv="data.csv", data_shape=(6,),
                                    label_csv="label2.csv", label_shape=(2,), batch_size=5), 1),
    ("mnist_flat", "MNISTIter", dict(image="img-idx3-ubyte", label="lbl-idx1-ubyte",
                                     batch_size=3, shuffle=False, flat=True, silent=True), 2),
    ("mnist_4d", "MNISTIter", dict(image="img-idx3-ubyte", label="lbl-idx1-ubyte",
                                   batch_size=2, shuffle=False, silent=True), 1),
    ("mnist_part", "MNISTIter", dict(image="img-idx3-ubyte", label="lbl-idx1-ubyte",
                                     batch_size=1, shuffle=False, num_parts=3, part_index=1,
                                     silent=True), 1),
    ("libsvm_round", "LibSVMIter", dict(data_libsvm="data.libsvm", data_shape=(8,),
                                        batch_size=3), 3),
    ("libsvm_label", "LibSVMIter", dict(data_libsvm="data.libsvm", data_shape=(8,),
                                        label_libsvm="label.libsvm", label_shape=(3,),
                                        batch_size=4), 2),
] + [("libsvm_part%d" % i, "LibSVMIter", dict(data_libsvm="data.libsvm", data_shape=(8,),
                                              batch_size=2, num_parts=3, part_index=i), 2)
     for i in range(3)]


def write_files():
    os.makedirs(FILES, exist_ok=True)
    rng = np.random.RandomState(0)
    data = rng.randint(0, 100, size=(10, 6)).astype(np.float32) / 4
    np.savetxt(os.path.join(FILES, "data.csv"), data, delimiter=",", fmt="%g")
    np.savetxt(os.path.join(FILES, "label.csv"), np.arange(10).reshape(10, 1), delimiter=",",
               fmt="%d")
    np.savetxt(os.path.join(FILES, "label2.csv"), np.arange(20).reshape(10, 2), delimiter=",",
               fmt="%d")
    images = rng.randint(0, 256, size=(7, 4, 3)).astype(np.uint8)
    with open(os.path.join(FILES, "img-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 2051, 7, 4, 3) + images.tobytes())
    with open(os.path.join(FILES, "lbl-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 2049, 7) + (np.arange(7, dtype=np.uint8) * 3 % 10).tobytes())
    write_libsvm(np.random.RandomState(1))


def write_libsvm(rng):
    """11 rows of 8 features (a blank line, a row with its label alone, CRLF line ends and
    columns out of order among them) and 11 label rows of 3."""
    lines = []
    for row in range(11):
        cols = rng.choice(8, size=rng.randint(0, 4), replace=False)
        pairs = " ".join("%d:%g" % (c, rng.randint(-8, 9) / 4) for c in cols)
        lines.append(("%d %s" % (row % 3, pairs)).strip())
    text = "\n".join(lines[:4]) + "\n\n" + "\r\n".join(lines[4:]) + "\n"
    with open(os.path.join(FILES, "data.libsvm"), "w", newline="") as f:
        f.write(text)
    with open(os.path.join(FILES, "label.libsvm"), "w") as f:
        f.write("".join("0 %d:1 2:%d\n" % (r % 2, r) for r in range(11)))


def run(mx, name, iterator, kwargs, epochs):
    """[epoch][batch] = {"data", "label", "pad"}, plus the provided shapes."""
    kwargs = dict(kwargs)
    for key in ("data_csv", "label_csv", "image", "label", "data_libsvm", "label_libsvm"):
        if key in kwargs:
            kwargs[key] = os.path.join(FILES, kwargs[key])
    it = getattr(mx.io, iterator)(**kwargs)
    out = {"provide_data": [list(d.shape) for d in it.provide_data],
           "provide_label": [list(d.shape) for d in it.provide_label], "epochs": []}
    for _ in range(epochs):
        out["epochs"].append([{"data": b.data[0].asnumpy().tolist(),
                               "label": b.label[0].asnumpy().tolist(), "pad": int(b.pad or 0)}
                              for b in it])
        it.reset()
    return out


def _kept(make, kept):
    def create(**kwargs):
        kept.append(make(**kwargs))
        return kept[-1]
    return create


if __name__ == "__main__":
    import mxnet as mx
    # MXNet 1.9.1 crashes (a segmentation fault) freeing a LibSVMIter: every one is kept
    # alive and the process ends without freeing them
    mx.io.LibSVMIter = _kept(mx.io.LibSVMIter, [])
    write_files()
    golden = {name: run(mx, name, it, kw, ep) for name, it, kw, ep in SCENARIOS}
    with open(os.path.join(HERE, "file_iters_golden.json"), "w") as f:
        json.dump(golden, f)
    sys.stdout.write("wrote %d scenarios\n" % len(golden))
    sys.stdout.flush()
    os._exit(0)
