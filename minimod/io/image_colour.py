"""ImageRecordIter's colour augmentations, applied to the cropped image:

- `random_h`, `random_s`, `random_l`: the image in OpenCV's 8-bit HLS space gets one whole
  random offset per channel, drawn in [-random_h, random_h] (and likewise), added to every
  pixel and clipped (hue to 0..180, lightness and saturation to 0..255), as MXNet's
  parameters say;
- `brightness`, `contrast`, `saturation` (MXNet's colour jitter, in a random order): each
  draws alpha = 1 + uniform(-v, v) and scales the pixels (brightness), their distance to the
  image's mean grey (contrast), or to each pixel's own grey (saturation), with the grey
  weights 0.299, 0.587, 0.114;
- `pca_noise`: AlexNet's lighting noise, RGB offsets along ImageNet's principal components
  with weights drawn from N(0, pca_noise) times the eigenvalues.

The draws come from the image's own generator (seeded per image from the iterator's `seed`),
so they are minimod's, not MXNet's: the same parameters give the same kind of images, not
the same images.
"""
from __future__ import annotations

import numpy as np

from ..ops.image_ops import GREY_WEIGHTS, IMAGENET_EIGVAL, IMAGENET_EIGVEC

__all__ = ["COLOUR_DEFAULTS", "check_colour", "hls_shift", "hsl_jitter", "colour_jitter"]

#: the colour parameters and their defaults (no change)
COLOUR_DEFAULTS = dict(random_h=0, random_s=0, random_l=0, brightness=0.0, contrast=0.0,
                       saturation=0.0, pca_noise=0.0)

_GREY = np.asarray(GREY_WEIGHTS, np.float32)
_EIGVAL = IMAGENET_EIGVAL.astype(np.float32)
_EIGVEC = IMAGENET_EIGVEC.astype(np.float32)


def check_colour(settings: dict, channels: int) -> str:
    """An error message for settings that cannot apply (negative, or colour on a grey or
    four-channel image), else ''."""
    bad = [k for k, v in settings.items() if v < 0]
    if bad:
        return "%s must be >= 0" % ", ".join("%s=%r" % (k, settings[k]) for k in bad)
    used = [k for k, v in settings.items() if v != COLOUR_DEFAULTS[k] and k != "brightness"]
    if channels != 3 and used:
        return "%s need(s) 3-channel images, data_shape has %d" % (", ".join(used), channels)
    return ""


def hls_shift(cv2, bgr: np.ndarray, hue: int, lightness: int, saturation: int) -> np.ndarray:
    """The uint8 BGR image with the offsets added to its 8-bit HLS channels, clipped (hue to
    0..180, the others to 0..255)."""
    hls = cv2.cvtColor(bgr, cv2.COLOR_BGR2HLS).astype(np.int16)
    hls += np.array([hue, lightness, saturation], np.int16)
    np.clip(hls, 0, np.array([180, 255, 255], np.int16), out=hls)
    return cv2.cvtColor(hls.astype(np.uint8), cv2.COLOR_HLS2BGR)


def hsl_jitter(cv2, bgr: np.ndarray, rng: np.random.RandomState, random_h: int,
               random_s: int, random_l: int) -> np.ndarray:
    """The uint8 BGR image with whole offsets in +-random_h/s/l added in HLS space."""
    offsets = [int(rng.uniform(-1, 1) * limit) for limit in (random_h, random_l, random_s)]
    return hls_shift(cv2, bgr, *offsets)


def colour_jitter(rgb: np.ndarray, rng: np.random.RandomState, brightness: float,
                  contrast: float, saturation: float, pca_noise: float) -> np.ndarray:
    """The float32 (h, w, c) RGB (or grey) image through the jitters in a random order,
    then the lighting noise."""
    steps = [(name, v) for name, v in (("brightness", brightness), ("contrast", contrast),
                                       ("saturation", saturation)) if v > 0]
    for k in rng.permutation(len(steps)):
        name, limit = steps[k]
        alpha = np.float32(1.0 + rng.uniform(-limit, limit))
        if name == "brightness":
            rgb = rgb * alpha
        elif name == "contrast":
            grey = np.float32((rgb @ _GREY).mean())
            rgb = rgb * alpha + grey * (1 - alpha)
        else:
            grey = (rgb @ _GREY)[:, :, None]
            rgb = rgb * alpha + grey * (1 - alpha)
    if pca_noise > 0:
        weights = rng.normal(0, pca_noise, 3).astype(np.float32)
        rgb = rgb + _EIGVEC @ (weights * _EIGVAL)
    return rgb.astype(np.float32)
