"""MXNet's detection augmenters: callables from (image, label) to (image, label), where the
image is an (h, w, c) NDArray and the label a numpy array with one row per object:
(class, xmin, ymin, xmax, ymax, extras...), the corners relative to the image (0 to 1).

- `DetBorrowAug` applies an image augmenter that moves no pixel (resize, cast, colour ...);
- `DetRandomSelectAug` applies one augmenter of a list, chosen at random, or none
  (with probability `skip_prob`);
- `DetHorizontalFlipAug` mirrors the image and the boxes with probability p;
- `DetRandomCropAug` crops a random window with constraints on its area, its aspect ratio and
  how much of the objects it keeps; `DetRandomPadAug` places the image at a random spot of a
  larger canvas. Both try up to `max_attempts` windows and leave the sample as it is when none
  satisfies the constraints;
- `CreateMultiRandCropAugmenter` and `CreateDetAugmenter` build MXNet's lists.

The random windows are drawn with Python's `random` module, as MXNet's are, but not in
MXNet's sequence: the constraints are MXNet's (tests/image/test_detection.py checks each),
the draws are minimod's own. Where MXNet documents a constraint loosely, minimod's reading:
every object the crop cuts into keeps at least `min_object_covered` of its area (and one
object at least is cut into); objects keeping less than `min_eject_coverage` leave the label.
"""
from __future__ import annotations

import logging
import math
import random

import numpy as np

from ..ndarray import NDArray
from ..ndarray.routines.shapes import flip
from .augmenters import Augmenter, ForceResizeAug, ResizeAug, colour_augmenters
from .functions import copyMakeBorder, fixed_crop

__all__ = ["DetAugmenter", "DetBorrowAug", "DetRandomSelectAug", "DetHorizontalFlipAug",
           "DetRandomCropAug", "DetRandomPadAug", "CreateMultiRandCropAugmenter",
           "CreateDetAugmenter"]


def _areas(boxes: np.ndarray) -> np.ndarray:
    """Areas of (xmin, ymin, xmax, ymax) rows; 0 for an empty box."""
    return np.maximum(0, boxes[:, 2] - boxes[:, 0]) * np.maximum(0, boxes[:, 3] - boxes[:, 1])


def _as_range(value, what: str) -> tuple:
    if isinstance(value, (list, tuple)):
        return tuple(float(v) for v in value)
    logging.info("Using a fixed %s: %s", what, value)
    return float(value), float(value)


class DetAugmenter(Augmenter):
    """A transformation of an image and its boxes; parameters kept for `dumps()`."""

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple:
        raise NotImplementedError("%s must define __call__" % type(self).__name__)


class DetBorrowAug(DetAugmenter):
    """An image augmenter that moves no pixel, applied to the image; the boxes stay."""

    def __init__(self, augmenter: Augmenter):
        if not isinstance(augmenter, Augmenter) or isinstance(augmenter, DetAugmenter):
            raise TypeError("DetBorrowAug needs an image Augmenter, got %s"
                            % type(augmenter).__name__)
        super().__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self) -> list:
        return [type(self).__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src, label):
        return self.augmenter(src), label


class DetRandomSelectAug(DetAugmenter):
    """One augmenter of `aug_list` at random; none with probability `skip_prob`."""

    def __init__(self, aug_list: list, skip_prob: float = 0):
        super().__init__(skip_prob=skip_prob)
        aug_list = list(aug_list) if isinstance(aug_list, (list, tuple)) else [aug_list]
        for aug in aug_list:
            if not isinstance(aug, DetAugmenter):
                raise TypeError("DetRandomSelectAug takes detection augmenters, got %s"
                                % type(aug).__name__)
        if not aug_list:
            skip_prob = 1
        self.aug_list, self.skip_prob = aug_list, skip_prob

    def dumps(self) -> list:
        return [type(self).__name__.lower(), [a.dumps() for a in self.aug_list]]

    def __call__(self, src, label):
        if random.random() < self.skip_prob:
            return src, label
        return random.choice(self.aug_list)(src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """With probability p, the image and its boxes mirrored left to right."""

    def __init__(self, p: float):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src, label):
        if random.random() < self.p:
            src = flip(src, axis=1)
            label = label.copy()
            label[:, (1, 3)] = 1.0 - label[:, (3, 1)]
        return src, label


def _window(area_range: tuple, ratio_range: tuple, height: int, width: int) -> tuple:
    """A random (w, h) in pixels: area a fraction of the image's in `area_range`, w / h in
    `ratio_range`; None when it cannot have at least 1 pixel each way."""
    area = random.uniform(*area_range) * height * width
    ratio = random.uniform(*ratio_range)
    if ratio <= 0 or area <= 0:
        return None
    w, h = int(round(math.sqrt(area * ratio))), int(round(math.sqrt(area / ratio)))
    return (w, h) if w >= 1 and h >= 1 else None


class DetRandomCropAug(DetAugmenter):
    """A random crop whose area is a fraction in `area_range` of the image's, with w / h in
    `aspect_ratio_range`, which cuts into at least one object and keeps at least
    `min_object_covered` of the area of each object it cuts into. Objects keeping less than
    `min_eject_coverage` of their area are dropped; the others are clipped to the crop."""

    def __init__(self, min_object_covered: float = 0.1, aspect_ratio_range=(0.75, 1.33),
                 area_range=(0.05, 1.0), min_eject_coverage: float = 0.3,
                 max_attempts: int = 50):
        aspect_ratio_range = _as_range(aspect_ratio_range, "aspect ratio")
        area_range = _as_range(area_range, "area range")
        super().__init__(min_object_covered=min_object_covered,
                         aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         min_eject_coverage=min_eject_coverage, max_attempts=max_attempts)
        self.min_object_covered, self.min_eject_coverage = min_object_covered, min_eject_coverage
        self.aspect_ratio_range, self.area_range = aspect_ratio_range, area_range
        self.max_attempts = max_attempts
        self.enabled = (0 < area_range[0] <= area_range[1] <= 1
                        and 0 < aspect_ratio_range[0] <= aspect_ratio_range[1])
        if not self.enabled:
            logging.warning("DetRandomCropAug is off: area_range %s must lie in (0, 1] and "
                            "aspect_ratio_range %s be positive and ordered", area_range,
                            aspect_ratio_range)

    def __call__(self, src, label):
        height, width = src.shape[0], src.shape[1]
        for _ in range(self.max_attempts if self.enabled else 0):
            size = _window(self.area_range, self.aspect_ratio_range, height, width)
            if size is None or size[0] > width or size[1] > height:
                continue
            w, h = size
            x, y = random.randint(0, width - w), random.randint(0, height - h)
            kept = self._kept(label, x / width, y / height, (x + w) / width, (y + h) / height)
            if kept is not None:
                return fixed_crop(src, x, y, w, h, None), kept
        return src, label

    def _kept(self, label, x0, y0, x1, y1):
        """The label inside the crop (x0, y0, x1, y1), or None when it breaks a constraint."""
        boxes = label[:, 1:5]
        areas = _areas(boxes)
        inside = np.stack([np.maximum(boxes[:, 0], x0), np.maximum(boxes[:, 1], y0),
                           np.minimum(boxes[:, 2], x1), np.minimum(boxes[:, 3], y1)], axis=1)
        coverage = np.where(areas > 0, _areas(inside) / np.where(areas > 0, areas, 1), 0)
        cut = coverage > 0
        if not cut.any() or coverage[cut].min() < self.min_object_covered:
            return None
        keep = coverage >= self.min_eject_coverage
        if not keep.any():
            return None
        out = label[keep].copy()
        scale = np.array([x1 - x0, y1 - y0, x1 - x0, y1 - y0])
        out[:, 1:5] = np.clip((inside[keep] - np.array([x0, y0, x0, y0])) / scale, 0, 1)
        return out


class DetRandomPadAug(DetAugmenter):
    """The image placed at a random spot of a canvas filled with `pad_val`, the canvas' area
    a multiple in `area_range` (above 1) of the image's, w / h in `aspect_ratio_range`, at
    least 2 pixels wider and taller than the image."""

    def __init__(self, aspect_ratio_range=(0.75, 1.33), area_range=(1.0, 3.0),
                 max_attempts: int = 50, pad_val=(128, 128, 128)):
        aspect_ratio_range = _as_range(aspect_ratio_range, "aspect ratio")
        area_range = _as_range(area_range, "area range")
        pad_val = tuple(pad_val) if isinstance(pad_val, (list, tuple)) else (pad_val,)
        super().__init__(aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         max_attempts=max_attempts, pad_val=pad_val)
        self.aspect_ratio_range, self.area_range = aspect_ratio_range, area_range
        self.max_attempts, self.pad_val = max_attempts, pad_val
        self.enabled = (area_range[1] > 1 and area_range[0] <= area_range[1]
                        and 0 < aspect_ratio_range[0] <= aspect_ratio_range[1])
        if not self.enabled:
            logging.warning("DetRandomPadAug is off: area_range %s must reach above 1 and "
                            "aspect_ratio_range %s be positive and ordered", area_range,
                            aspect_ratio_range)

    def __call__(self, src, label):
        height, width = src.shape[0], src.shape[1]
        low = max(1.0, self.area_range[0])
        for _ in range(self.max_attempts if self.enabled else 0):
            size = _window((low, self.area_range[1]), self.aspect_ratio_range, height, width)
            if size is None or size[0] < width + 2 or size[1] < height + 2:
                continue
            w, h = size
            x, y = random.randint(0, w - width), random.randint(0, h - height)
            out = label.copy()
            out[:, (1, 3)] = (out[:, (1, 3)] * width + x) / w
            out[:, (2, 4)] = (out[:, (2, 4)] * height + y) / h
            fill = {"values": self.pad_val} if len(self.pad_val) > 1 else \
                {"value": self.pad_val[0]}
            return copyMakeBorder(src, y, h - height - y, x, w - width - x, 0, **fill), out
        return src, label


def CreateMultiRandCropAugmenter(min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                                 area_range=(0.05, 1.0), min_eject_coverage=0.3,
                                 max_attempts=50, skip_prob=0) -> DetRandomSelectAug:
    """Several DetRandomCropAug, one per entry of the parameters given as lists (the others
    repeated), chosen among at random; none with probability `skip_prob`."""
    params = [min_object_covered, aspect_ratio_range, area_range, min_eject_coverage,
              max_attempts]
    nested = (1, 2)  # aspect_ratio_range and area_range are pairs: a list of them is a list
    lengths = set()
    for k, value in enumerate(params):
        if isinstance(value, list) and (k not in nested or isinstance(value[0], (list, tuple))):
            lengths.add(len(value))
    if len(lengths) > 1:
        raise ValueError("CreateMultiRandCropAugmenter: the list parameters have different "
                         "lengths %s" % sorted(lengths))
    count = lengths.pop() if lengths else 1
    columns = []
    for k, value in enumerate(params):
        listed = isinstance(value, list) and (k not in nested or isinstance(value[0],
                                                                          (list, tuple)))
        columns.append(value if listed else [value] * count)
    augs = [DetRandomCropAug(*row) for row in zip(*columns)]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)


def CreateDetAugmenter(data_shape: tuple, resize: int = 0, rand_crop: float = 0,
                       rand_pad: float = 0, rand_gray: float = 0, rand_mirror: bool = False,
                       mean=None, std=None, brightness: float = 0, contrast: float = 0,
                       saturation: float = 0, pca_noise: float = 0, hue: float = 0,
                       inter_method: int = 2, min_object_covered=0.1,
                       aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 3.0),
                       min_eject_coverage=0.3, max_attempts=50,
                       pad_val=(127, 127, 127)) -> list:
    """MXNet's default detection augmenters for images of `data_shape` (c, h, w), in its
    order: resize the short edge, random crop (probability `rand_crop`), mirror, random pad
    (probability `rand_pad`), resize to the data shape, cast, colour jitter, hue, PCA
    lighting, grey, normalize (`mean`/`std` True: ImageNet's RGB statistics)."""
    auglist: list = []
    if resize > 0:
        auglist.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    if rand_crop > 0:
        auglist.append(CreateMultiRandCropAugmenter(min_object_covered, aspect_ratio_range,
                                                    area_range, min_eject_coverage,
                                                    max_attempts, skip_prob=1 - rand_crop))
    if rand_mirror:
        auglist.append(DetHorizontalFlipAug(0.5))
    if rand_pad > 0:
        pad = DetRandomPadAug(aspect_ratio_range, (1.0, area_range[1]), max_attempts, pad_val)
        auglist.append(DetRandomSelectAug([pad], 1 - rand_pad))
    auglist.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    tail = colour_augmenters(brightness, contrast, saturation, hue, pca_noise, rand_gray, mean,
                             std, "CreateDetAugmenter")
    return auglist + [DetBorrowAug(aug) for aug in tail]

