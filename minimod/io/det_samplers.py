"""ImageDetRecordIter's random samplers: the SSD-style crop, the zoom-out pad and the colour
changes, on an image (h, w, c) and its boxes (objects x width: class, xmin, ymin, xmax, ymax,
extras..., the corners relative to the image).

- Crop (probability `rand_crop_prob`): each of the `num_crop_sampler` samplers tries up to
  `max_crop_trials` windows of side scale s in [min_crop_scales, max_crop_scales] (relative
  to the image) and aspect r in [min_crop_aspect_ratios, max_crop_aspect_ratios], narrowed so
  the window fits (w = s sqrt(r), h = s / sqrt(r), both at most 1), and keeps the first
  window for which one ground-truth box has its IoU with the window, the share of the window
  it covers and the share of itself the window covers all inside their [min, max] ranges.
  One kept window is chosen at random. Objects then leave by `crop_emit_mode`: 'center' keeps
  the boxes whose centre lies in the window, 'overlap' those keeping more than
  `emit_overlap_thresh` of their area; the kept boxes are clipped to the window. A window
  that would keep no box is not used.
- Pad (probability `rand_pad_prob`): the image placed at a random spot of a canvas s times
  its size, s in [1, max_pad_scale], filled with `fill_value`.
- Colour (each with its probability): whole offsets in +-max_random_hue, +-max_random_
  saturation, +-max_random_illumination added to H, S and L in OpenCV's HLS space, and a
  contrast change about the mean grey by alpha in 1 +- max_random_contrast.

The draws come from the image's own generator: they are minimod's, so the same parameters
give the same kind of samples as MXNet's, not the same samples.
"""
from __future__ import annotations

import math

import numpy as np

from ..ops.image_ops import GREY_WEIGHTS
from .base import DataIterError
from .image_colour import hls_shift

__all__ = ["CROP_DEFAULTS", "OTHER_DEFAULTS", "DetSamplers"]

#: the crop samplers' settings (one value per sampler, or one for all) and their defaults
CROP_DEFAULTS = dict(min_crop_scales=(0.0,), max_crop_scales=(1.0,),
                     min_crop_aspect_ratios=(1.0,), max_crop_aspect_ratios=(1.0,),
                     min_crop_overlaps=(0.0,), max_crop_overlaps=(1.0,),
                     min_crop_sample_coverages=(0.0,), max_crop_sample_coverages=(1.0,),
                     min_crop_object_coverages=(0.0,), max_crop_object_coverages=(1.0,),
                     max_crop_trials=(25,))
#: the other sampler settings and their defaults
OTHER_DEFAULTS = dict(rand_crop_prob=0.0, num_crop_sampler=1, crop_emit_mode="center",
                      emit_overlap_thresh=0.3, rand_pad_prob=0.0, max_pad_scale=1.0,
                      random_hue_prob=0.0, max_random_hue=0, random_saturation_prob=0.0,
                      max_random_saturation=0, random_illumination_prob=0.0,
                      max_random_illumination=0, random_contrast_prob=0.0,
                      max_random_contrast=0.0)
_GREY = np.asarray(GREY_WEIGHTS[::-1], np.float32)  # BGR


def _per_sampler(settings: dict, count: int) -> dict:
    out = {}
    for key in CROP_DEFAULTS:
        values = settings[key]
        values = tuple(values) if isinstance(values, (list, tuple)) else (values,)
        if len(values) == 1:
            values *= count
        if len(values) != count:
            raise DataIterError("ImageDetRecordIter: %s has %d values for num_crop_sampler=%d"
                                % (key, len(values), count))
        out[key] = values
    return out


def _overlaps(window: tuple, boxes: np.ndarray) -> tuple:
    """(intersection areas, box areas, window area) of `window` with each box."""
    x0, y0, x1, y1 = window
    iw = np.clip(np.minimum(boxes[:, 3], x1) - np.maximum(boxes[:, 1], x0), 0, None)
    ih = np.clip(np.minimum(boxes[:, 4], y1) - np.maximum(boxes[:, 2], y0), 0, None)
    areas = (boxes[:, 3] - boxes[:, 1]) * (boxes[:, 4] - boxes[:, 2])
    return iw * ih, areas, (x1 - x0) * (y1 - y0)


class DetSamplers:
    """The samplers of one ImageDetRecordIter, checked at construction."""

    def __init__(self, settings: dict, fill_value: int):
        self.s = dict(OTHER_DEFAULTS, **{k: settings[k] for k in OTHER_DEFAULTS
                                         if k in settings})
        self.fill_value = fill_value
        count = int(self.s["num_crop_sampler"])
        crop = dict(CROP_DEFAULTS, **{k: settings[k] for k in CROP_DEFAULTS if k in settings})
        self.crop = _per_sampler(crop, max(count, 1))
        probs = [k for k in self.s if k.endswith("_prob")]
        if any(not 0 <= self.s[k] <= 1 for k in probs):
            raise DataIterError("ImageDetRecordIter: the probabilities %s must lie in [0, 1]"
                                % {k: self.s[k] for k in probs})
        if self.s["crop_emit_mode"] not in ("center", "overlap"):
            raise DataIterError("ImageDetRecordIter: crop_emit_mode must be 'center' or "
                                "'overlap', got %r" % (self.s["crop_emit_mode"],))
        if self.s["max_pad_scale"] < 1 or count < 0:
            raise DataIterError("ImageDetRecordIter: max_pad_scale=%r must be >= 1 and "
                                "num_crop_sampler=%r >= 0" % (self.s["max_pad_scale"], count))

    def __call__(self, cv2, img: np.ndarray, boxes: np.ndarray, rng) -> tuple:
        s = self.s
        if s["rand_crop_prob"] > 0 and s["num_crop_sampler"] > 0 \
                and rng.rand() < s["rand_crop_prob"]:
            img, boxes = self._crop(img, boxes, rng)
        if s["rand_pad_prob"] > 0 and s["max_pad_scale"] > 1 and rng.rand() < s["rand_pad_prob"]:
            img, boxes = self._pad(cv2, img, boxes, rng)
        return img, boxes

    def colour(self, cv2, img: np.ndarray, rng) -> np.ndarray:
        """The uint8 BGR image through the colour samplers."""
        s = self.s
        shifts = []
        for key in ("hue", "illumination", "saturation"):  # H, L, S
            limit = s["max_random_" + key]
            drawn = limit and rng.rand() < s["random_%s_prob" % key]
            shifts.append(int(rng.uniform(-1, 1) * limit) if drawn else 0)
        if any(shifts) and img.ndim == 3 and img.shape[2] == 3:
            img = hls_shift(cv2, img, *shifts)
        limit = s["max_random_contrast"]
        if limit and rng.rand() < s["random_contrast_prob"]:
            alpha = 1 + rng.uniform(-limit, limit)
            pixels = img.astype(np.float32)
            grey = float((pixels.reshape(-1, pixels.shape[-1])[:, :3] @ _GREY).mean()) \
                if pixels.ndim == 3 and pixels.shape[2] >= 3 else float(pixels.mean())
            img = np.clip(pixels * alpha + grey * (1 - alpha), 0, 255).astype(np.uint8)
        return img

    def _crop(self, img, boxes, rng) -> tuple:
        rows, cols = img.shape[:2]
        found = []
        for i in range(len(self.crop["max_crop_trials"])):
            window = self._sample(boxes, i, rng)
            if window is not None:
                found.append(window)
        while found:
            window = found.pop(int(rng.randint(len(found))))
            kept = self._emit(boxes, window)
            if kept is not None:
                x0, y0, x1, y1 = window
                left, top = int(round(x0 * cols)), int(round(y0 * rows))
                right = max(left + 1, int(round(x1 * cols)))
                bottom = max(top + 1, int(round(y1 * rows)))
                return img[top:bottom, left:right], kept
        return img, boxes

    def _sample(self, boxes, i: int, rng):
        c = {k: v[i] for k, v in self.crop.items()}
        for _ in range(int(c["max_crop_trials"])):
            scale = rng.uniform(c["min_crop_scales"], c["max_crop_scales"])
            if scale <= 0:
                continue
            low = max(c["min_crop_aspect_ratios"], scale * scale)
            high = min(c["max_crop_aspect_ratios"], 1 / (scale * scale))
            if low > high:
                continue
            ratio = rng.uniform(low, high)
            w, h = min(1.0, scale * math.sqrt(ratio)), min(1.0, scale / math.sqrt(ratio))
            x0, y0 = rng.uniform(0, 1 - w), rng.uniform(0, 1 - h)
            window = (x0, y0, x0 + w, y0 + h)
            inter, areas, area = _overlaps(window, boxes)
            iou = inter / np.maximum(areas + area - inter, 1e-12)
            ok = ((c["min_crop_overlaps"] <= iou) & (iou <= c["max_crop_overlaps"])
                  & (c["min_crop_sample_coverages"] <= inter / area)
                  & (inter / area <= c["max_crop_sample_coverages"])
                  & (c["min_crop_object_coverages"] <= inter / np.maximum(areas, 1e-12))
                  & (inter / np.maximum(areas, 1e-12) <= c["max_crop_object_coverages"]))
            if ok.any():
                return window
        return None

    def _emit(self, boxes, window):
        """The boxes that stay in `window`, in its coordinates; None when none stays."""
        x0, y0, x1, y1 = window
        if self.s["crop_emit_mode"] == "center":
            cx, cy = (boxes[:, 1] + boxes[:, 3]) / 2, (boxes[:, 2] + boxes[:, 4]) / 2
            keep = (x0 <= cx) & (cx <= x1) & (y0 <= cy) & (cy <= y1)
        else:
            inter, areas, _ = _overlaps(window, boxes)
            keep = inter / np.maximum(areas, 1e-12) > self.s["emit_overlap_thresh"]
        if not keep.any():
            return None
        out = boxes[keep].copy()
        out[:, (1, 3)] = np.clip((out[:, (1, 3)] - x0) / (x1 - x0), 0, 1)
        out[:, (2, 4)] = np.clip((out[:, (2, 4)] - y0) / (y1 - y0), 0, 1)
        return out

    def _pad(self, cv2, img, boxes, rng) -> tuple:
        rows, cols = img.shape[:2]
        scale = rng.uniform(1, self.s["max_pad_scale"])
        height, width = int(round(rows * scale)), int(round(cols * scale))
        top, left = int(rng.randint(0, height - rows + 1)), int(rng.randint(0, width - cols + 1))
        canvas = cv2.copyMakeBorder(img, top, height - rows - top, left, width - cols - left,
                                    cv2.BORDER_CONSTANT, value=[self.fill_value] * 4)
        out = boxes.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] * cols + left) / width
        out[:, (2, 4)] = (out[:, (2, 4)] * rows + top) / height
        return canvas.reshape(height, width, -1) if img.ndim == 3 else canvas, out
