"""`mx.io.ImageDetRecordIter`: batches of images and their boxes from a detection RecordIO file
(im2rec.py's `--pack-label` records), as MXNet 1.9.1's iterator gives them (the SSD example's
input).

A record's label is [A, B, extra header values..., then objects of B values: class, xmin,
ymin, xmax, ymax, ...] with A the header's length and coordinates relative to the image. Each
image is decoded, resized to `data_shape` whatever its aspect (`resize_mode='force'`),
normalised and cast as in ImageRecordIter, and mirrored with probability `rand_mirror_prob`
(xmin, xmax become 1 - xmax, 1 - xmin). A batch's label rows are [channels, height, width,
L] followed by the record's L label values and `label_pad_value` up to a common width:
4 + `label_pad_width`, or 4 + the longest label of the data when that is 0 (found by reading
every record's label once, as MXNet estimates it). Epochs, parts, round_batch, shuffle,
threads and prefetching are ImageRecordIter's (tests compare with MXNet's batches:
tests/data/io/image_det_golden.npz).

The random samplers (`rand_crop_prob` with the crop samplers' ranges, `rand_pad_prob` with
`max_pad_scale` and `fill_value`, `random_hue/saturation/illumination/contrast_prob`) work on
the image and its boxes before the resize (det_samplers.py; their draws are minimod's own).
`resize_mode` 'fit' resizes to the largest size of the image's aspect inside the data
shape, 'shrink' does so only for a larger image; the image then sits at the top left of a
canvas of zero pixels (before normalising), its boxes relative to the image, and the label
row's header gives the image's own height and width, as MXNet's does. With `path_imglist`,
a record's label is the list's line of its header's id, as in ImageRecordIter.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..recordio import unpack
from .base import DataDesc, DataIterError
from .det_samplers import CROP_DEFAULTS, OTHER_DEFAULTS, DetSamplers
from .image_colour import COLOUR_DEFAULTS
from .image_files import read_record
from .image_record import ImageRecordIter

__all__ = ["ImageDetRecordIter"]

class ImageDetRecordIter(ImageRecordIter):
    """Images (batch, c, h, w) and padded label rows (batch, width) of a detection RecordIO
    file; see the module docstring."""

    def __init__(self, label_width: int = -1, label_pad_width: int = 0,
                 label_pad_value: float = -1.0, rand_mirror_prob: float = 0.0,
                 resize_mode: str = "force", **kwargs: Any):
        settings = {k: kwargs.pop(k) for k in list(kwargs)
                    if k in CROP_DEFAULTS or k in OTHER_DEFAULTS}
        kwargs.setdefault("fill_value", 127)  # MXNet's detection iterator pads with grey
        self._samplers = DetSamplers(settings, kwargs["fill_value"])
        if resize_mode not in ("force", "fit", "shrink"):
            raise DataIterError("ImageDetRecordIter: resize_mode must be 'force', 'fit' or "
                                "'shrink', got %r" % (resize_mode,))
        if resize_mode != "force" and kwargs.get("mean_img"):
            raise DataIterError("ImageDetRecordIter: mean_img needs resize_mode='force' (a "
                                "fitted image does not fill the data shape)")
        self._resize_mode = resize_mode
        if label_width != -1:
            raise DataIterError("ImageDetRecordIter: label_width=%r; minimod reads the label "
                                "width of each record (label_width=-1)" % (label_width,))
        for key in COLOUR_DEFAULTS:  # ImageRecordIter's colour settings: MXNet's detection
            if key in kwargs:        # iterator has samplers of its own instead
                raise DataIterError("ImageDetRecordIter has no parameter %r" % key)
        if not 0 <= rand_mirror_prob <= 1 or label_pad_width < 0:
            raise DataIterError("ImageDetRecordIter: rand_mirror_prob=%r must be in [0, 1] and "
                                "label_pad_width=%r >= 0" % (rand_mirror_prob, label_pad_width))
        self._pad_width, self._pad_value = label_pad_width, np.float32(label_pad_value)
        self._mirror_prob = rand_mirror_prob
        super().__init__(**kwargs)

    def _prepare(self) -> None:
        longest = self._pad_width
        if not longest and self._labels is not None:  # the list's labels replace the records'
            longest = max(np.asarray(labels).size for labels, _ in self._labels.values())
        elif not longest:
            with open(self.path, "rb") as f:
                for offset in self._offsets:
                    header, _ = unpack(read_record(f, offset))
                    longest = max(longest, np.asarray(header.label).size)
        self.label_width = 4 + longest
        desc = self.provide_label[0]
        self.provide_label = [DataDesc(desc.name, (self.batch_size, self.label_width),
                                       np.float32)]

    def _augment(self, img: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
        """img resized: to the data shape ('force'), to the largest size of the image's
        aspect inside it ('fit'), or to that only when larger ('shrink')."""
        c, h, w = self.shape
        rows, cols = img.shape[:2]
        if self._resize_mode == "force":
            size = (w, h)
        else:
            factor = min(h / rows, w / cols)
            if self._resize_mode == "shrink":
                factor = min(factor, 1.0)
            size = (max(1, int(cols * factor)), max(1, int(rows * factor)))
        return self._resized(img, size, rng).reshape(size[1], size[0], -1)

    def _augment_sample(self, img: np.ndarray, label, rng: np.random.RandomState) -> tuple:
        """The samplers' crop and pad (boxes moved with them), the resize, the colour
        samplers; with 'fit' or 'shrink', the mirror and the placing of the image at the top
        left of a zero canvas of the data shape, as MXNet does."""
        lab = np.array(label, np.float32).reshape(-1)
        start = int(lab[0]) if lab.size >= 2 else 0
        width = int(lab[1]) if lab.size >= 2 else 0
        if width < 5 or start < 2 or lab.size <= start or (lab.size - start) % width:
            img = self._augment(img, rng)
            return img, label, img.shape[:2]  # _label_row names what is wrong
        img, boxes = self._samplers(self._cv2, img, lab[start:].reshape(-1, width), rng)
        img = self._samplers.colour(self._cv2, self._augment(img, rng), rng)
        content = img.shape[:2]
        if self._resize_mode != "force":
            if self._mirror_prob > 0 and rng.rand() < self._mirror_prob:
                img = img[:, ::-1]
                boxes = boxes.copy()
                boxes[:, (1, 3)] = 1 - boxes[:, (3, 1)]
            canvas = np.zeros((self.shape[1], self.shape[2], img.shape[2]), img.dtype)
            canvas[:content[0], :content[1]] = img
            img = canvas
        return img, np.concatenate([lab[:start], boxes.reshape(-1)]), content

    def _flip(self, rng: np.random.RandomState) -> bool:
        """The forced resize's mirror (after normalising); 'fit' and 'shrink' mirror the image
        before it is placed on its canvas."""
        return bool(self._resize_mode == "force" and self._mirror_prob > 0
                    and rng.rand() < self._mirror_prob)

    def _label_row(self, lab, flipped: bool, content: tuple) -> np.ndarray:
        lab = np.array(lab, np.float32).reshape(-1)
        if lab.size < 2 or lab.size > self.label_width - 4:
            raise DataIterError("ImageDetRecordIter: a record of '%s' has a label of %d values; "
                                "detection labels are [A, B, header..., objects of B values] "
                                "of at most %d" % (self.path, lab.size, self.label_width - 4))
        if flipped:
            start, width = int(lab[0]), int(lab[1])
            boxes = lab[start:].reshape(-1, width)
            xmin = boxes[:, 1].copy()
            boxes[:, 1] = 1 - boxes[:, 3]
            boxes[:, 3] = 1 - xmin
        row = np.full(self.label_width, self._pad_value, np.float32)
        row[:4] = (self.shape[0],) + tuple(content) + (lab.size,)
        row[4:4 + lab.size] = lab
        return row
