"""Write image_record_variants.npz: the first batch MXNet 1.9.1's other image-record
iterators give (ImageRecordInt8Iter, ImageRecordIter_v1, ImageRecordUInt8Iter_v1), for the
configurations below, from files/images.rec:

    OMP_NUM_THREADS=1 /path/to/mxnet-venv/bin/python gen_image_record_variants.py

Keys `<name>/data`, `<name>/label`, `<name>/kwargs` (JSON, with the iterator's name).
"""
import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REC = os.path.join(HERE, "files", "images.rec")

CASES = {
    "int8_plain": ("ImageRecordInt8Iter", dict(data_shape=(3, 20, 20), batch_size=7)),
    "int8_mean": ("ImageRecordInt8Iter", dict(data_shape=(3, 20, 20), batch_size=7,
                                              mean_r=100, mean_g=120, mean_b=140, std_r=2,
                                              scale=0.5)),
    "int8_resize_mirror": ("ImageRecordInt8Iter", dict(data_shape=(3, 16, 16), batch_size=7,
                                                       resize=18, mirror=True, mean_r=128,
                                                       mean_g=128, mean_b=128)),
    "v1_resize_pad": ("ImageRecordIter_v1", dict(data_shape=(3, 24, 24), batch_size=7,
                                                 resize=20, pad=2, fill_value=9, mean_r=5,
                                                 std_g=2)),
    "uint8_v1": ("ImageRecordUInt8Iter_v1", dict(data_shape=(3, 16, 16), batch_size=7,
                                                 resize=18, inter_method=2)),
}


def main():
    store = {}
    for name, (cls, kwargs) in CASES.items():
        it = getattr(mx.io, cls)(path_imgrec=REC, preprocess_threads=1, **kwargs)
        batch = next(iter(it))
        store[name + "/data"] = batch.data[0].asnumpy()
        store[name + "/label"] = batch.label[0].asnumpy()
        store[name + "/kwargs"] = np.array(json.dumps([cls, kwargs]))
    np.savez_compressed(os.path.join(HERE, "image_record_variants.npz"), **store)


if __name__ == "__main__":
    main()
