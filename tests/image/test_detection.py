"""mx.image.ImageDetIter and the detection augmenters.

The iterator configurations without random draws give MXNet 1.9.1's batches
(tests/data/image/det_iter_golden.npz, written by gen_det_iter_golden.py from det_cases.py):
labels exactly, pixels within one level (OpenCV versions round area resizing differently).
The random crops and pads are minimod's own draws, so their contracts are checked instead:
window sizes, which objects stay, and that every kept box still frames its object's pixels.
"""
import json
import os
import random
import sys

import numpy as np
import pytest

import minimod as mx
from minimod.image import detection as det

pytest.importorskip("cv2", reason="the image extra (OpenCV) is not installed")

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "image")
sys.path.insert(0, HERE)
from det_cases import CASES, IMGLIST, PICTURES, REC, drawn, read  # noqa: E402

GOLDEN = np.load(os.path.join(HERE, "det_iter_golden.npz"))
# minimod's rolled-over batch has pad 0 (image_iter.py); MXNet counts the new epoch's rows
ROLLED = {("roll_over", "e1b0_pad"), ("roll_over", "e2b0_pad")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_batches_match_mxnet(case):
    it, epochs = CASES[case](mx)
    got = read(it, epochs)
    want = {k.split("/", 1)[1]: GOLDEN[k] for k in GOLDEN.files if k.startswith(case + "/")}
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        if (case, key) in ROLLED:
            assert got[key] == 0 and value > 0
        elif key.endswith("_data"):
            np.testing.assert_allclose(got[key], value, atol=1.0)
        else:
            np.testing.assert_array_equal(np.asarray(got[key]), value)


def test_draw_next_matches_mxnet():
    np.testing.assert_allclose(drawn(mx).astype(int), GOLDEN["drawn"], atol=1)


def test_draw_next_keeps_one_colour():
    """MXNet reverses the colour at every image, so every second image gets the wrong one;
    minimod draws each in the colour asked for (BGR in the image)."""
    it = mx.image.ImageDetIter(1, (3, 32, 32), path_imgrec=REC,
                               aug_list=[det.DetBorrowAug(mx.image.ForceResizeAug((32, 32)))])
    images = list(it.draw_next(color=(255, 0, 0), thickness=1, clip=True))
    assert len(images) == 5
    for image in images:
        assert image.dtype == np.uint8
        blue, green, red = (image[..., k] for k in range(3))
        assert ((red == 255) & (green == 0) & (blue == 0)).sum() > 10


def _picture(height=60, width=80):
    """A grey image with two coloured boxes, and its label."""
    img = np.full((height, width, 3), 100, np.uint8)
    boxes = np.array([[1, 0.1, 0.2, 0.4, 0.7], [2, 0.55, 0.1, 0.9, 0.5]], np.float32)
    colours = {1: (255, 0, 0), 2: (0, 0, 255)}
    for cls, x0, y0, x1, y1 in boxes:
        img[int(y0 * height):int(y1 * height), int(x0 * width):int(x1 * width)] = colours[int(cls)]
    return mx.nd.array(img, dtype="uint8"), boxes, colours


def _frames_its_colour(img, boxes, colours):
    """Each box's inner pixels have its object's colour."""
    h, w = img.shape[:2]
    for cls, x0, y0, x1, y1 in boxes:
        inner = img[int(np.ceil(y0 * h)) + 1:int(y1 * h) - 1, int(np.ceil(x0 * w)) + 1:
                    int(x1 * w) - 1]
        if inner.size:
            assert (inner == colours[int(cls)]).all()


def test_random_crop_keeps_its_constraints():
    crop = det.DetRandomCropAug(min_object_covered=0.3, aspect_ratio_range=(0.5, 2.0),
                                area_range=(0.1, 0.8), min_eject_coverage=0.4)
    src, boxes, colours = _picture()
    cropped = 0
    for seed in range(60):
        random.seed(seed)
        img, label = crop(src, boxes)
        if img.shape == src.shape:
            continue
        cropped += 1
        h, w = img.shape[:2]
        assert 0.1 * 60 * 80 * 0.8 <= h * w <= 0.8 * 60 * 80 * 1.2
        assert 0.5 * 0.8 <= w / h <= 2.0 * 1.2
        assert ((label[:, 1:5] >= 0) & (label[:, 1:5] <= 1)).all()
        assert (label[:, 3] > label[:, 1]).all() and (label[:, 4] > label[:, 2]).all()
        assert set(label[:, 0]) <= {1, 2}
        _frames_its_colour(img.asnumpy(), label, colours)
    assert cropped > 30


def test_random_crop_gives_up_when_nothing_fits():
    crop = det.DetRandomCropAug(min_object_covered=0.99, area_range=(0.01, 0.02),
                                max_attempts=20)
    src, boxes, _ = _picture()
    img, label = crop(src, boxes)
    assert img is src and label is boxes


def test_random_pad_places_the_image_on_a_canvas():
    pad = det.DetRandomPadAug(area_range=(1.5, 3.0), pad_val=(1, 2, 3))
    src, boxes, colours = _picture()
    for seed in range(20):
        random.seed(seed)
        img, label = pad(src, boxes)
        h, w = img.shape[:2]
        assert h >= 62 and w >= 82 and 1.5 * 0.8 <= h * w / (60 * 80) <= 3.0 * 1.2
        pixels = img.asnumpy()
        assert (pixels[0, 0] == (1, 2, 3)).all() or (pixels[-1, -1] == (1, 2, 3)).all()
        _frames_its_colour(pixels, label, colours)
        np.testing.assert_allclose((label[:, 3] - label[:, 1]) * w,
                                   (boxes[:, 3] - boxes[:, 1]) * 80, rtol=1e-5)


def test_flip_select_and_borrow():
    src, boxes, colours = _picture()
    img, label = det.DetHorizontalFlipAug(1.0)(src, boxes)
    np.testing.assert_allclose(label[:, (1, 3)], 1 - boxes[:, (3, 1)])
    _frames_its_colour(img.asnumpy(), label, colours)
    img, label = det.DetHorizontalFlipAug(0.0)(src, boxes)
    assert label is boxes
    skip = det.DetRandomSelectAug([det.DetHorizontalFlipAug(1.0)], skip_prob=1.0)
    assert skip(src, boxes)[1] is boxes
    always = det.DetRandomSelectAug([det.DetHorizontalFlipAug(1.0)], skip_prob=0.0)
    np.testing.assert_allclose(always(src, boxes)[1][:, 1], 1 - boxes[:, 3])
    with pytest.raises(TypeError, match="image Augmenter"):
        det.DetBorrowAug(det.DetHorizontalFlipAug(1.0))


def test_create_augmenters():
    augs = det.CreateDetAugmenter((3, 30, 40), resize=50, rand_crop=0.5, rand_pad=0.3,
                                  rand_mirror=True, mean=True, std=True, brightness=0.1,
                                  min_object_covered=[0.1, 0.5, 0.9])
    names = [json.loads(a.dumps())[0] if isinstance(a.dumps(), str) else a.dumps()[0]
             for a in augs]
    assert names == ["detborrowaug", "detrandomselectaug", "dethorizontalflipaug",
                     "detrandomselectaug", "detborrowaug", "detborrowaug", "detborrowaug",
                     "detborrowaug"]
    crops = augs[1]
    assert len(crops.aug_list) == 3 and crops.skip_prob == 0.5
    assert [a.min_object_covered for a in crops.aug_list] == [0.1, 0.5, 0.9]
    with pytest.raises(ValueError, match="different lengths"):
        det.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.2],
                                         min_eject_coverage=[0.1, 0.2, 0.3])


def test_random_pipeline_end_to_end():
    random.seed(0)
    it = mx.image.ImageDetIter(2, (3, 24, 24), path_imgrec=REC, rand_crop=0.7, rand_pad=0.7,
                               rand_mirror=True, area_range=(0.3, 2.0), mean=True, std=True)
    assert it.provide_label[0].shape == (2, 3, 5)
    for _ in range(3):
        it.reset()
        for batch in it:
            label = batch.label[0].asnumpy()
            assert batch.data[0].shape == (2, 3, 24, 24)
            objects = label[label[..., 0] >= 0]
            assert len(objects) >= 2
            assert ((objects[:, 1:5] >= 0) & (objects[:, 1:5] <= 1)).all()


def test_label_shape_checks_and_skipped_samples():
    it = mx.image.ImageDetIter(2, (3, 10, 10), imglist=IMGLIST, path_root=PICTURES)
    assert it.label_shape == (3, 6)
    with pytest.raises(ValueError, match="reduce label count from 3 to 2"):
        it.reshape(label_shape=(2, 6))
    with pytest.raises(ValueError, match="width inconsistent: 6 vs 5"):
        it.reshape(label_shape=(4, 5))
    with pytest.raises(TypeError, match="needs an ImageDetIter"):
        it.sync_label_shape(object())
    broken = [[[2, 6, 1, 0.5, 0.5, 0.2, 0.2, 0], "pic0.png"]] + IMGLIST[1:2]
    it = mx.image.ImageDetIter(1, (3, 10, 10), imglist=IMGLIST[1:2], path_root=PICTURES)
    it.imglist["1"] = (mx.nd.array(broken[0][0]), "pic0.png")  # no valid box: skipped
    it.reset()
    with pytest.raises(StopIteration):
        it.next()
    it = mx.image.ImageDetIter(1, (3, 10, 10), imglist=IMGLIST[1:2], path_root=PICTURES)
    it.imglist["1"] = (mx.nd.array(IMGLIST[3][0]), "pic3.png")  # three boxes for one row
    it.reset()
    with pytest.raises(mx.base.MXNetError, match="widen it with reshape"):
        it.next()
