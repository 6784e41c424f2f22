"""Write tests/data/io/files/detection.rec/.idx (five PNG images with 1-3 boxes each, labelled
[2, 5, (class, xmin, ymin, xmax, ymax) ...]) and image_det_golden.npz: the batches MXNet
1.9.1's ImageDetRecordIter gives for the configurations below, two epochs each (its random
crops, pads, colour changes and mirrors are left out: their draws are MXNet's own).

    OMP_NUM_THREADS=1 /tmp/mxenv/bin/python tests/data/io/gen_image_det_golden.py

Per configuration `<name>/...`: `kwargs` (JSON), `provide` (names and shapes) and per batch k
of epoch e `e<e>b<k>_data`, `_label`, `_pad`.
"""
import json
import os
import sys

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "image"))
from image_cases import png  # noqa: E402  (PNG bytes of an RGB image)

FILES = os.path.join(HERE, "files")
SIZES = [(20, 30), (33, 25), (28, 28), (40, 22), (24, 36)]


def write_records():
    rng = np.random.RandomState(1)
    rec = mx.recordio.MXIndexedRecordIO(os.path.join(FILES, "detection.idx"),
                                        os.path.join(FILES, "detection.rec"), "w")
    for i, (h, w) in enumerate(SIZES):
        img = rng.randint(0, 256, (h, w, 3)).astype(np.uint8)
        boxes = []
        for k in range(1 + i % 3):
            x1, y1 = rng.uniform(0, 0.5, 2)
            boxes += [float(k + i), x1, y1, x1 + 0.3, y1 + 0.4]
        label = np.array([2, 5] + boxes, np.float32)
        rec.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(len(label), label, i, 0),
                                          png(img)))
    rec.close()
    with open(os.path.join(FILES, "detection.lst"), "w") as f:  # other boxes, width 6
        for i in range(len(SIZES)):
            boxes = [i % 3, 0.1, 0.2, 0.6, 0.7, 1.0] + ([7, 0.5, 0.5, 0.9, 0.8, 0.0] if i % 2
                                                          else [])
            f.write("%d\t%s\timage%d.png\n" % (i, "\t".join(str(v) for v in [2, 6] + boxes),
                                                i))


CONFIGS = {
    "default": dict(data_shape=(3, 16, 16), batch_size=3),
    "pad_width": dict(data_shape=(3, 16, 16), batch_size=5, label_pad_width=30,
                      label_pad_value=0.5),
    "wide": dict(data_shape=(3, 12, 20), batch_size=5, inter_method=2),
    "auto": dict(data_shape=(3, 16, 16), batch_size=5, inter_method=9),
    "nearest": dict(data_shape=(3, 16, 16), batch_size=5, inter_method=0),
    "normalise": dict(data_shape=(3, 16, 16), batch_size=5, mean_r=10, mean_g=20, mean_b=30,
                      std_r=2, std_g=4, std_b=8, scale=0.5),
    "no_round_batch": dict(data_shape=(3, 16, 16), batch_size=2, round_batch=False),
    "part_1_of_2": dict(data_shape=(3, 16, 16), batch_size=2, num_parts=2, part_index=1),
    "names": dict(data_shape=(3, 16, 16), batch_size=5, data_name="img", label_name="boxes"),
    "fit": dict(data_shape=(3, 32, 32), batch_size=5, resize_mode="fit", mean_r=10, mean_g=20,
                mean_b=30),
    "shrink": dict(data_shape=(3, 32, 32), batch_size=5, resize_mode="shrink", mean_r=10,
                   mean_g=20, mean_b=30, std_r=2, std_g=2, std_b=2),
    "imglist": dict(data_shape=(3, 16, 16), batch_size=5, path_imglist="detection.lst",
                    rand_mirror_prob=1.0),
    "fit_mirror": dict(data_shape=(3, 24, 30), batch_size=5, resize_mode="fit",
                       rand_mirror_prob=1.0, mean_r=5, mean_g=5, mean_b=5),
}


def main():
    write_records()
    store = {}
    for name, kwargs in CONFIGS.items():
        args = dict(kwargs)
        if "path_imglist" in args:
            args["path_imglist"] = os.path.join(FILES, args["path_imglist"])
        it = mx.io.ImageDetRecordIter(path_imgrec=os.path.join(FILES, "detection.rec"),
                                      preprocess_threads=1, **args)
        store[name + "/kwargs"] = np.array(json.dumps(kwargs))
        store[name + "/provide"] = np.array(json.dumps(
            [[d.name, list(d.shape)] for d in it.provide_data + it.provide_label]))
        for epoch in range(2):
            for k, batch in enumerate(it):
                key = "%s/e%db%d" % (name, epoch, k)
                store[key + "_data"] = batch.data[0].asnumpy()
                store[key + "_label"] = batch.label[0].asnumpy()
                store[key + "_pad"] = np.array(batch.pad)
            it.reset()
    np.savez_compressed(os.path.join(HERE, "image_det_golden.npz"), **store)
    print("wrote %d configurations" % len(CONFIGS))


if __name__ == "__main__":
    main()
