"""MXNet's image augmenters: callables from an (h, w, c) NDArray to another, and
`CreateAugmenter`, the list `ImageIter` applies by default.

Each draws from Python's `random` module (LightingAug from NumPy's) in MXNet's order, so under
the same seeds they give MXNet's images (tests/image). `dumps()` gives MXNet's JSON
description ([class name in lower case, its parameters]).
"""
from __future__ import annotations

import json
import random

import numpy as np

from ..ndarray import NDArray
from ..ndarray import array as nd_array
from ..ndarray.routines.products import dot
from ..ndarray.routines.reductions import sum as nd_sum
from ..ndarray.routines.shapes import flip
from ..ops.image_ops import (
    GREY_WEIGHTS,
    IMAGENET_EIGVAL,
    IMAGENET_EIGVEC,
    IMAGENET_MEAN,
    IMAGENET_STD,
)
from .functions import (
    _get_interp_method,
    center_crop,
    color_normalize,
    imresize,
    random_crop,
    random_size_crop,
    resize_short,
)

__all__ = ["Augmenter", "SequentialAug", "ResizeAug", "ForceResizeAug", "RandomCropAug",
           "RandomSizedCropAug", "CenterCropAug", "RandomOrderAug", "BrightnessJitterAug",
           "ContrastJitterAug", "SaturationJitterAug", "HueJitterAug", "ColorJitterAug",
           "LightingAug", "ColorNormalizeAug", "RandomGrayAug", "HorizontalFlipAug", "CastAug",
           "CreateAugmenter"]



class Augmenter:
    """An image transformation; its parameters are kept for `dumps()`."""

    def __init__(self, **kwargs):
        self._kwargs = {k: (v.asnumpy().tolist() if isinstance(v, NDArray) else
                            v.tolist() if isinstance(v, np.ndarray) else v)
                        for k, v in kwargs.items()}

    def dumps(self) -> str:
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, src: NDArray) -> NDArray:
        raise NotImplementedError("%s must define __call__" % type(self).__name__)


class SequentialAug(Augmenter):
    """The augmenters `ts` one after another."""

    def __init__(self, ts: list):
        super().__init__()
        self.ts = ts

    def dumps(self) -> list:
        """[class name in lower case, the members' dumps()] (a list, not JSON, as MXNet's)."""
        return [type(self).__name__.lower(), [t.dumps() for t in self.ts]]

    def __call__(self, src: NDArray) -> NDArray:
        for aug in self.ts:
            src = aug(src)
        return src


class RandomOrderAug(SequentialAug):
    """The augmenters `ts` in a random order (reshuffled at every call)."""

    def __call__(self, src: NDArray) -> NDArray:
        random.shuffle(self.ts)
        return super().__call__(src)


class ResizeAug(Augmenter):
    """The shorter edge resized to `size`."""

    def __init__(self, size: int, interp: int = 2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resized to `size` (w, h), aspect not kept."""

    def __init__(self, size: tuple, interp: int = 2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        return imresize(src, *self.size, interp=_get_interp_method(self.interp, sizes))


class RandomCropAug(ResizeAug):
    """A window of `size` (w, h) at a random place (see `random_crop`)."""

    def __call__(self, src):
        return random_crop(src, self.size, self.interp)[0]


class CenterCropAug(ResizeAug):
    """The centre window of `size` (w, h) (see `center_crop`)."""

    def __call__(self, src):
        return center_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """A window of random area (a fraction in `area`) and aspect (in `ratio`) resized to
    `size` (see `random_size_crop`)."""

    def __init__(self, size: tuple, area, ratio: tuple, interp: int = 2, **kwargs):
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.size, self.ratio, self.interp = size, ratio, interp
        self.area = kwargs.pop("min_area", area)
        if kwargs:
            raise TypeError("RandomSizedCropAug: unexpected arguments %s" % sorted(kwargs))

    def __call__(self, src):
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class BrightnessJitterAug(Augmenter):
    """Pixels scaled by 1 + a draw in [-brightness, brightness]."""

    def __init__(self, brightness: float):
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src):
        src *= 1.0 + random.uniform(-self.brightness, self.brightness)
        return src


class ContrastJitterAug(Augmenter):
    """Blended with the image's mean luma by 1 + a draw in [-contrast, contrast]."""

    def __init__(self, contrast: float):
        super().__init__(contrast=contrast)
        self.contrast = contrast
        self.coef = nd_array([[GREY_WEIGHTS]])

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        gray = src * self.coef
        gray = (3.0 * (1.0 - alpha) / gray.size) * nd_sum(gray)
        src *= alpha
        src += gray
        return src


class SaturationJitterAug(Augmenter):
    """Blended with each pixel's luma by 1 + a draw in [-saturation, saturation]."""

    def __init__(self, saturation: float):
        super().__init__(saturation=saturation)
        self.saturation = saturation
        self.coef = nd_array([[GREY_WEIGHTS]])

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        gray = nd_sum(src * self.coef, axis=2, keepdims=True)
        gray *= 1.0 - alpha
        src *= alpha
        src += gray
        return src


class HueJitterAug(Augmenter):
    """The hue rotated by a draw in [-hue, hue] half-turns, in YIQ space."""

    def __init__(self, hue: float):
        super().__init__(hue=hue)
        self.hue = hue
        self.tyiq = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321],
                              [0.211, -0.523, 0.311]])
        self.ityiq = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647],
                               [1.0, -1.107, 1.705]])

    def __call__(self, src):
        alpha = random.uniform(-self.hue, self.hue)
        u, w = np.cos(alpha * np.pi), np.sin(alpha * np.pi)
        rotate = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
        t = np.dot(np.dot(self.ityiq, rotate), self.tyiq).T
        return dot(src, nd_array(t))


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitters (those above 0) in a random order."""

    def __init__(self, brightness: float, contrast: float, saturation: float):
        ts = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super().__init__(ts)


class LightingAug(Augmenter):
    """AlexNet's PCA lighting noise: eigvec @ (eigval * N(0, alphastd) draws) added."""

    def __init__(self, alphastd: float, eigval, eigvec):
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd, self.eigval, self.eigvec = alphastd, eigval, eigvec

    def __call__(self, src):
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        src += nd_array(np.dot(self.eigvec * alpha, self.eigval))
        return src


class ColorNormalizeAug(Augmenter):
    """(src - mean) / std (see `color_normalize`)."""

    def __init__(self, mean, std):
        super().__init__(mean=mean, std=std)
        self.mean = mean if mean is None or isinstance(mean, NDArray) else nd_array(mean)
        self.std = std if std is None or isinstance(std, NDArray) else nd_array(std)

    def __call__(self, src):
        return color_normalize(src, self.mean, self.std)


class RandomGrayAug(Augmenter):
    """With probability p, every channel becomes the luma 0.21 R + 0.72 G + 0.07 B."""

    def __init__(self, p: float):
        super().__init__(p=p)
        self.p = p
        self.mat = nd_array([[0.21, 0.21, 0.21], [0.72, 0.72, 0.72], [0.07, 0.07, 0.07]])

    def __call__(self, src):
        if random.random() < self.p:
            src = dot(src, self.mat)
        return src


class HorizontalFlipAug(Augmenter):
    """With probability p, mirrored left to right."""

    def __init__(self, p: float):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src):
        if random.random() < self.p:
            src = flip(src, axis=1)
        return src


class CastAug(Augmenter):
    """Cast to `typ`."""

    def __init__(self, typ: str = "float32"):
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        return src.astype(self.typ)


def CreateAugmenter(data_shape: tuple, resize: int = 0, rand_crop: bool = False,
                    rand_resize: bool = False, rand_mirror: bool = False, mean=None, std=None,
                    brightness: float = 0, contrast: float = 0, saturation: float = 0,
                    hue: float = 0, pca_noise: float = 0, rand_gray: float = 0,
                    inter_method: int = 2) -> list:
    """MXNet's default augmenter list for images of `data_shape` (c, h, w): resize the short
    edge, crop (random-sized, random or centre), mirror, cast to float32, colour jitter, hue,
    PCA lighting, grey, normalise (`mean`/`std` True: ImageNet's RGB statistics)."""
    auglist: list = []
    if resize > 0:
        auglist.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise ValueError("CreateAugmenter: rand_resize needs rand_crop")
        auglist.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        auglist.append(RandomCropAug(crop_size, inter_method))
    else:
        auglist.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        auglist.append(HorizontalFlipAug(0.5))
    return auglist + colour_augmenters(brightness, contrast, saturation, hue, pca_noise,
                                       rand_gray, mean, std, "CreateAugmenter")


def colour_augmenters(brightness: float, contrast: float, saturation: float, hue: float,
                      pca_noise: float, rand_gray: float, mean, std, caller: str) -> list:
    """The tail both default lists (CreateAugmenter, CreateDetAugmenter) share: cast to
    float32, colour jitter, hue, PCA lighting, grey, normalise (`mean`/`std` True: ImageNet's
    RGB statistics)."""
    auglist: list = [CastAug()]
    if brightness or contrast or saturation:
        auglist.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        auglist.append(HueJitterAug(hue))
    if pca_noise > 0:
        auglist.append(LightingAug(pca_noise, IMAGENET_EIGVAL, IMAGENET_EIGVEC))
    if rand_gray > 0:
        auglist.append(RandomGrayAug(rand_gray))
    mean = nd_array(IMAGENET_MEAN) if mean is True else _rgb(mean, "mean", caller)
    std = nd_array(IMAGENET_STD) if std is True else _rgb(std, "std", caller)
    if mean is not None or std is not None:
        auglist.append(ColorNormalizeAug(mean, std))
    return auglist


def _rgb(value, what: str, caller: str = "CreateAugmenter"):
    """A mean or std argument checked: None, or an array of 1 or 3 values."""
    if value is None:
        return None
    if not isinstance(value, (np.ndarray, NDArray)) or value.shape[0] not in (1, 3):
        raise ValueError("%s: %s must be True, or an array of 1 or 3 values, got %r"
                         % (caller, what, value))
    return value
