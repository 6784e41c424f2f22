"""ImageDetRecordIter's random samplers (minimod/io/det_samplers.py): their draws are
minimod's own, so each is checked by its contract: the crop windows meet the sampler's
constraints, the boxes that stay are the ones the emit mode keeps, every kept box still
frames its object's pixels after a crop or a pad, and the colour samplers stay in range."""
import os

import numpy as np
import pytest

from minimod.io import ImageDetRecordIter
from minimod.io.det_samplers import DetSamplers, _overlaps

cv2 = pytest.importorskip("cv2", reason="the image extra (OpenCV) is not installed")

REC = os.path.join(os.path.dirname(__file__), "data", "io", "files", "detection.rec")
SSD = dict(num_crop_sampler=5, min_crop_scales=(0.3,), max_crop_scales=(1.0,),
           min_crop_aspect_ratios=(0.5,), max_crop_aspect_ratios=(2.0,),
           min_crop_overlaps=(0.1, 0.3, 0.5, 0.7, 0.9), max_crop_trials=(50,))


def _picture(rows=60, cols=80):
    img = np.full((rows, cols, 3), 90, np.uint8)
    boxes = np.array([[0, 0.1, 0.2, 0.45, 0.7], [1, 0.55, 0.1, 0.9, 0.5],
                      [2, 0.3, 0.75, 0.6, 0.95]], np.float32)
    colours = [(255, 0, 0), (0, 255, 0), (0, 0, 255)]
    for (cls, x0, y0, x1, y1), colour in zip(boxes, colours):
        img[int(y0 * rows):int(y1 * rows), int(x0 * cols):int(x1 * cols)] = colour
    return img, boxes, colours


def _frames(img, boxes, colours):
    h, w = img.shape[:2]
    for cls, x0, y0, x1, y1 in boxes[:, :5]:
        inner = img[int(np.ceil(y0 * h)) + 1:int(y1 * h) - 1,
                    int(np.ceil(x0 * w)) + 1:int(x1 * w) - 1]
        if inner.size:
            assert (inner == colours[int(cls)]).all()


def test_crop_windows_meet_their_sampler():
    samplers = DetSamplers(dict(SSD, rand_crop_prob=1.0), 127)
    _, boxes, _ = _picture()
    for seed in range(30):
        rng = np.random.RandomState(seed)
        for i, low in enumerate((0.1, 0.3, 0.5, 0.7, 0.9)):
            window = samplers._sample(boxes, i, rng)
            if window is None:
                continue
            x0, y0, x1, y1 = window
            assert 0 <= x0 < x1 <= 1 + 1e-9 and 0 <= y0 < y1 <= 1 + 1e-9
            w, h = x1 - x0, y1 - y0
            scale, ratio = np.sqrt(w * h), w / h
            assert 0.3 - 1e-6 <= scale <= 1 + 1e-6 and 0.5 - 1e-6 <= ratio <= 2 + 1e-6
            inter, areas, area = _overlaps(window, boxes)
            assert (inter / (areas + area - inter) >= low).any()


def test_crops_keep_the_centred_boxes_and_their_pixels():
    samplers = DetSamplers(dict(SSD, rand_crop_prob=1.0), 127)
    img, boxes, colours = _picture()
    cropped = 0
    for seed in range(40):
        out, kept = samplers(cv2, img, boxes, np.random.RandomState(seed))
        if out.shape == img.shape:
            continue
        cropped += 1
        assert 1 <= len(kept) <= 3
        assert ((kept[:, 1:5] >= 0) & (kept[:, 1:5] <= 1)).all()
        _frames(out, kept, colours)
    assert cropped > 20


def test_overlap_emit_mode_drops_the_barely_covered():
    samplers = DetSamplers(dict(rand_crop_prob=1.0, crop_emit_mode="overlap",
                                emit_overlap_thresh=0.6), 127)
    _, boxes, _ = _picture()
    kept = samplers._emit(boxes, (0.0, 0.0, 0.5, 0.5))
    # box 0 keeps 0.3/0.5 of its height: 0.6 of it, not more than the threshold; box 1 keeps
    # none of its width; box 2 lies outside
    assert kept is None
    kept = samplers._emit(boxes, (0.0, 0.0, 0.5, 0.75))
    assert kept[:, 0].tolist() == [0]


def test_pad_places_the_image_on_a_grey_canvas():
    samplers = DetSamplers(dict(rand_pad_prob=1.0, max_pad_scale=3.0), 127)
    img, boxes, colours = _picture()
    for seed in range(10):
        out, moved = samplers(cv2, img, boxes, np.random.RandomState(seed))
        scale = out.shape[0] / img.shape[0]
        assert 1 <= scale <= 3.05
        assert abs(out.shape[1] / img.shape[1] - scale) < 0.05
        _frames(out, moved, colours)
        border = np.concatenate([out[0], out[-1], out[:, 0], out[:, -1]])
        assert ((border == 127).all(axis=1) | (border == 90).all(axis=1)
                | (border[:, None] == np.array(colours)).all(axis=2).any(axis=1)).all()


def test_colour_samplers_stay_in_their_ranges():
    img, _, _ = _picture()
    off = DetSamplers(dict(random_illumination_prob=0.0, max_random_illumination=40), 127)
    assert off.colour(cv2, img, np.random.RandomState(0)) is img
    lit = DetSamplers(dict(random_illumination_prob=1.0, max_random_illumination=40), 127)
    base = cv2.cvtColor(img, cv2.COLOR_BGR2HLS)[..., 1].astype(int)
    moves = []
    for seed in range(10):
        out = lit.colour(cv2, img, np.random.RandomState(seed))
        moves.append(np.median(cv2.cvtColor(out, cv2.COLOR_BGR2HLS)[..., 1] - base))
    assert all(abs(m) <= 41 for m in moves) and np.ptp(moves) > 5
    contrast = DetSamplers(dict(random_contrast_prob=1.0, max_random_contrast=0.5), 127)
    out = contrast.colour(cv2, img, np.random.RandomState(1)).astype(float)
    grey = np.array([0.114, 0.587, 0.299])
    assert abs((out @ grey).mean() - (img.astype(float) @ grey).mean()) < 1.0


def test_ssd_recipe_through_the_iterator():
    it = ImageDetRecordIter(path_imgrec=REC, data_shape=(3, 32, 32), batch_size=5,
                            rand_crop_prob=0.8, rand_pad_prob=0.5, max_pad_scale=4.0,
                            random_hue_prob=0.5, max_random_hue=18,
                            random_saturation_prob=0.5, max_random_saturation=32,
                            random_illumination_prob=0.5, max_random_illumination=32,
                            random_contrast_prob=0.5, max_random_contrast=0.5,
                            rand_mirror_prob=0.5, seed=2, **SSD)
    for _ in range(3):
        it.reset()
        for batch in it:
            assert batch.data[0].shape == (5, 3, 32, 32)
            for row in batch.label[0].asnumpy():
                assert tuple(row[:3]) == (3, 32, 32)
                lab = row[4:4 + int(row[3])]
                boxes = lab[int(lab[0]):].reshape(-1, int(lab[1]))
                assert 1 <= len(boxes) <= 3
                assert ((boxes[:, 1:5] >= 0) & (boxes[:, 1:5] <= 1)).all()
                assert (boxes[:, 3] >= boxes[:, 1]).all() and (boxes[:, 4] >= boxes[:, 2]).all()
