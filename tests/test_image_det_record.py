"""mx.io.ImageDetRecordIter: MXNet 1.9.1's batches (images and padded box labels) for every
configuration without random draws (tests/data/io/image_det_golden.npz, written by
gen_image_det_golden.py from tests/data/io/files/detection.rec), the mirror's boxes, and the
refusals."""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.io import DataIterError

pytest.importorskip("cv2", reason="the image extra (OpenCV) is not installed")

HERE = os.path.join(os.path.dirname(__file__), "data", "io")
REC = os.path.join(HERE, "files", "detection.rec")
GOLDEN = np.load(os.path.join(HERE, "image_det_golden.npz"))
CONFIGS = sorted({k.split("/")[0] for k in GOLDEN.files})
# bicubic resizes: OpenCV versions round a few pixels one level apart
TOLERANCE = {"wide": 1.0, "auto": 1.0}


@pytest.mark.parametrize("name", CONFIGS)
def test_batches_are_mxnets(name):
    kwargs = json.loads(str(GOLDEN[name + "/kwargs"]))
    if "path_imglist" in kwargs:
        kwargs["path_imglist"] = os.path.join(HERE, "files", kwargs["path_imglist"])
    it = mx.io.ImageDetRecordIter(path_imgrec=REC, preprocess_threads=2, **kwargs)
    provide = [[d.name, list(d.shape)] for d in it.provide_data + it.provide_label]
    assert provide == json.loads(str(GOLDEN[name + "/provide"]))
    for epoch in range(2):
        keys = sorted({k.split("/")[1].split("_")[0] for k in GOLDEN.files
                       if k.startswith("%s/e%d" % (name, epoch))})
        got = list(it)
        assert len(got) == len(keys)
        for batch, key in zip(got, keys):
            assert batch.pad == int(GOLDEN["%s/%s_pad" % (name, key)])
            real = len(batch.label[0]) - batch.pad
            np.testing.assert_allclose(batch.data[0].asnumpy()[:real],
                                       GOLDEN["%s/%s_data" % (name, key)][:real], rtol=1e-6,
                                       atol=TOLERANCE.get(name, 1e-5))
            np.testing.assert_array_equal(batch.label[0].asnumpy()[:real],
                                          GOLDEN["%s/%s_label" % (name, key)][:real])
        it.reset()


def test_mirror_flips_image_and_boxes():
    plain = next(iter(mx.io.ImageDetRecordIter(path_imgrec=REC, data_shape=(3, 16, 16),
                                               batch_size=5)))
    flipped = next(iter(mx.io.ImageDetRecordIter(path_imgrec=REC, data_shape=(3, 16, 16),
                                                 batch_size=5, rand_mirror_prob=1.0)))
    np.testing.assert_array_equal(flipped.data[0].asnumpy(),
                                  plain.data[0].asnumpy()[:, :, :, ::-1])
    a, b = plain.label[0].asnumpy(), flipped.label[0].asnumpy()
    for row_a, row_b in zip(a, b):
        count = int(row_a[3])
        boxes_a = row_a[6:4 + count].reshape(-1, 5)
        boxes_b = row_b[6:4 + count].reshape(-1, 5)
        np.testing.assert_allclose(boxes_b[:, 1], 1 - boxes_a[:, 3], rtol=1e-6)
        np.testing.assert_allclose(boxes_b[:, 3], 1 - boxes_a[:, 1], rtol=1e-6)
        np.testing.assert_array_equal(boxes_b[:, [0, 2, 4]], boxes_a[:, [0, 2, 4]])
    half = mx.io.ImageDetRecordIter(path_imgrec=REC, data_shape=(3, 16, 16), batch_size=5,
                                    rand_mirror_prob=0.5, seed=1)
    flips = 0
    for _ in range(8):
        labels = next(iter(half)).label[0].asnumpy()
        flips += int((np.abs(labels[:, 7] - a[:, 7]) > 1e-6).sum())
        half.reset()
    assert 0 < flips < 40


@pytest.mark.parametrize("kwargs, text", [
    (dict(rand_crop_prob=1.5), r"probabilities .* must lie in \[0, 1\]"),
    (dict(crop_emit_mode="edge"), "crop_emit_mode must be 'center' or 'overlap'"),
    (dict(num_crop_sampler=2, min_crop_scales=(0.1, 0.2, 0.3)),
     "min_crop_scales has 3 values for num_crop_sampler=2"),
    (dict(max_pad_scale=0.5), "max_pad_scale=0.5 must be >= 1"),
    (dict(resize_mode="fill"), "resize_mode must be .force., .fit. or .shrink."),
    (dict(resize_mode="fit", mean_img="mean.bin"), "mean_img needs resize_mode='force'"),
    (dict(label_width=5), "label_width=5"),
    (dict(rand_mirror_prob=2.0), r"must be in \[0, 1\]"),
    (dict(label_pad_width=4), "a label of 7 values"),
])
def test_refusals_name_the_parameter(kwargs, text):
    with pytest.raises(DataIterError, match=text):
        list(mx.io.ImageDetRecordIter(path_imgrec=REC, data_shape=(3, 16, 16), batch_size=2,
                                      **kwargs))


def test_sampler_settings_are_accepted_while_the_samplers_are_off():
    it = mx.io.ImageDetRecordIter(path_imgrec=REC, data_shape=(3, 16, 16), batch_size=5,
                                  min_crop_scales=(0.3,), max_crop_trials=(25,),
                                  max_pad_scale=4.0, rand_crop_prob=0)
    assert next(iter(it)).data[0].shape == (5, 3, 16, 16)
