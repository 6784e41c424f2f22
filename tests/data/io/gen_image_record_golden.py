"""Write the image RecordIO files of tests/data/io/files (images.rec/.idx: seven PNG images of
different sizes, labels 0..6; multilabel.rec/.idx: the same images, three labels each;
images.lst: an im2rec list giving them two other labels each) and
image_record_golden.npz: the batches MXNet 1.9.1's ImageRecordIter gives for the configurations
below (two epochs each; its random augmentations are left out, their draws are MXNet's own).

    OMP_NUM_THREADS=1 /tmp/mxenv/bin/python tests/data/io/gen_image_record_golden.py

Per configuration `<name>/...`: `kwargs` (JSON), `provide` (names and shapes), and per batch
k of epoch e `e<e>b<k>_data` (uint8 where every value is a whole number in 0..255, else
float32), `_label`, `_pad`.
"""
import json
import os
import sys
import tempfile

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "image"))
from image_cases import png  # noqa: E402  (PNG bytes of an RGB image)

FILES = os.path.join(HERE, "files")
SIZES = [(20, 30), (33, 25), (28, 28), (40, 22), (24, 36), (31, 31), (26, 29)]


def write_records():
    rng = np.random.RandomState(0)
    images = [rng.randint(0, 256, (h, w, 3)).astype(np.uint8) for h, w in SIZES]
    single = mx.recordio.MXIndexedRecordIO(os.path.join(FILES, "images.idx"),
                                           os.path.join(FILES, "images.rec"), "w")
    multi = mx.recordio.MXIndexedRecordIO(os.path.join(FILES, "multilabel.idx"),
                                          os.path.join(FILES, "multilabel.rec"), "w")
    for i, img in enumerate(images):
        single.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, float(i), i, 0), png(img)))
        labels = np.array([i, 10 + i, 0.5 * i], dtype=np.float32)
        multi.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(3, labels, i, 0), png(img)))
    single.close()
    multi.close()
    with open(os.path.join(FILES, "images.lst"), "w") as f:  # an im2rec list, not in id order
        for i in (3, 0, 6, 1, 2, 5, 4):
            f.write("%d\t%d\t%.1f\timg%d.png\n" % (i, 100 + i, 0.5 * i, i))
    mean = rng.uniform(0, 255, (3, 20, 20)).astype(np.float32)
    mx.nd.save(os.path.join(FILES, "mean_20.bin"), {"mean_img": mx.nd.array(mean)})


CONFIGS = {
    "center_crop": dict(data_shape=(3, 20, 20), batch_size=3),
    "no_round_batch": dict(data_shape=(3, 20, 20), batch_size=3, round_batch=False),
    "resize_down": dict(data_shape=(3, 16, 16), batch_size=7, resize=18),
    "resize_up": dict(data_shape=(3, 32, 32), batch_size=7, resize=40),
    "crop_larger_than_image": dict(data_shape=(3, 32, 32), batch_size=7),
    "normalise": dict(data_shape=(3, 20, 20), batch_size=7, mean_r=10, mean_g=20, mean_b=30,
                      std_r=2, std_g=4, std_b=8, scale=0.5),
    "grayscale": dict(data_shape=(1, 20, 20), batch_size=7),
    "mirror": dict(data_shape=(3, 20, 20), batch_size=7, mirror=True),
    "uint8": dict(data_shape=(3, 20, 20), batch_size=7, dtype="uint8"),
    "pad_fill": dict(data_shape=(3, 24, 34), batch_size=7, pad=2, fill_value=7),
    "nearest": dict(data_shape=(3, 16, 16), batch_size=7, resize=18, inter_method=0),
    "cubic": dict(data_shape=(3, 16, 16), batch_size=7, resize=18, inter_method=2),
    "area": dict(data_shape=(3, 16, 16), batch_size=7, resize=18, inter_method=3),
    "lanczos": dict(data_shape=(3, 16, 16), batch_size=7, resize=18, inter_method=4),
    "auto_shrink": dict(data_shape=(3, 16, 16), batch_size=7, resize=18, inter_method=9),
    "auto_enlarge": dict(data_shape=(3, 32, 32), batch_size=7, inter_method=9),
    "auto_mixed": dict(data_shape=(3, 16, 16), batch_size=7, resize=27, inter_method=9),
    "auto_aspect": dict(data_shape=(3, 20, 20), batch_size=7, resize=24, inter_method=9),
    "rotate": dict(data_shape=(3, 24, 24), batch_size=7, rotate=30, inter_method=4),
    "rotate_bilinear": dict(data_shape=(3, 28, 28), batch_size=7, rotate=30),
    "scale_aspect": dict(data_shape=(3, 24, 24), batch_size=7, inter_method=4,
                         rotate=20, min_random_scale=1.2, max_random_scale=1.2,
                         min_aspect_ratio=0.8, max_aspect_ratio=0.8),
    "img_size_bounds": dict(data_shape=(3, 24, 24), batch_size=7, inter_method=4, rotate=10,
                            max_img_size=26),
    "warp_resize_pad": dict(data_shape=(3, 24, 24), batch_size=7, inter_method=4, resize=30,
                            rotate=20, pad=2, fill_value=9),
    "mean_img": dict(data_shape=(3, 20, 20), batch_size=7, mean_img="mean_20.bin"),
    "crop_size": dict(data_shape=(3, 16, 12), batch_size=7, min_crop_size=18, max_crop_size=18),
    "crop_size_cubic": dict(data_shape=(3, 12, 12), batch_size=7, min_crop_size=16,
                            max_crop_size=16, inter_method=2, resize=20),
    "multilabel": dict(data_shape=(3, 20, 20), batch_size=4, label_width=3,
                       path_imgrec="multilabel.rec"),
    "imglist": dict(data_shape=(3, 20, 20), batch_size=4, label_width=2,
                    path_imglist="images.lst"),
    "names": dict(data_shape=(3, 20, 20), batch_size=7, data_name="img",
                  label_name="lbl"),
}
#: mean_img names a file that does not exist yet: the iterator computes and writes it
COMPUTED_MEAN = {"mean_img_computed": dict(data_shape=(3, 16, 16), batch_size=7, resize=18,
                                           mirror=True, mean_r=5, scale=0.5,
                                           mean_img="computed_mean.bin")}
CONFIGS.update(COMPUTED_MEAN)
for parts in ((2, 0), (2, 1), (3, 0), (3, 1), (3, 2), (5, 4)):
    CONFIGS["part_%d_of_%d" % (parts[1], parts[0])] = dict(
        data_shape=(3, 20, 20), batch_size=2, num_parts=parts[0], part_index=parts[1])


def main():
    write_records()
    store = {}
    for name, kwargs in CONFIGS.items():
        args = dict(kwargs)
        args["path_imgrec"] = os.path.join(FILES, args.get("path_imgrec", "images.rec"))
        if name in COMPUTED_MEAN:
            written = os.path.join(tempfile.mkdtemp(), args["mean_img"])
            args["mean_img"] = written
        elif "mean_img" in args:
            args["mean_img"] = os.path.join(FILES, args["mean_img"])
        if "path_imglist" in args:
            args["path_imglist"] = os.path.join(FILES, args["path_imglist"])
        it = mx.io.ImageRecordIter(preprocess_threads=1, **args)
        if name in COMPUTED_MEAN:
            store[name + "/written_mean"] = list(mx.nd.load(written).values())[0].asnumpy()
        store[name + "/kwargs"] = np.array(json.dumps(kwargs))
        for epoch in range(2):  # as Module.fit runs them: reset after each epoch
            for k, batch in enumerate(it):
                key = "%s/e%db%d" % (name, epoch, k)
                data = batch.data[0].asnumpy()
                exact = np.array_equal(data, np.clip(np.round(data), 0, 255))
                store[key + "_data"] = data.astype(np.uint8) if exact else data
                store[key + "_label"] = batch.label[0].asnumpy()
                store[key + "_pad"] = np.array(batch.pad)
            it.reset()
        store[name + "/provide"] = np.array(json.dumps(
            [[d.name, list(d.shape)] for d in it.provide_data + it.provide_label]))
    np.savez_compressed(os.path.join(HERE, "image_record_golden.npz"), **store)
    print("wrote %d configurations" % len(CONFIGS))


if __name__ == "__main__":
    main()
