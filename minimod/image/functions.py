"""MXNet's image functions over (height, width, channels) NDArrays: decoding (`imdecode`,
`imread`), resizing (`imresize`, `resize_short`), borders, crops and normalisation.

Images are decoded and resized with OpenCV (the `image` extra), as MXNet's are. The random
crops draw from Python's `random` module in MXNet's order, so a program that seeds `random`
gets MXNet's windows (tests/image compares with MXNet 1.9.1 under the same seeds).
Interpolation codes: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos; 9 picks by the
resize (bicubic to enlarge, area to shrink, bilinear otherwise) and 10 draws one of 0-4.
"""
from __future__ import annotations

import random
from numbers import Number
from typing import Optional

import numpy as np

from ..base import MXNetError
from ..ndarray import NDArray
from ..ndarray import array as nd_array
from ..recordio import opencv as _cv2

__all__ = ["imread", "imdecode", "imresize", "scale_down", "copyMakeBorder", "resize_short",
           "fixed_crop", "random_crop", "center_crop", "color_normalize", "random_size_crop"]


def _image(data: np.ndarray, like: Optional[NDArray] = None) -> NDArray:
    """(h, w) or (h, w, c) pixels as an (h, w, c) NDArray (on `like`'s device)."""
    data = data.reshape(data.shape[:2] + (-1,))
    return nd_array(data, ctx=None if like is None else like.context, dtype=data.dtype)


def _pixels(src) -> np.ndarray:
    if not isinstance(src, NDArray) or src.ndim != 3:
        raise MXNetError("expected an (height, width, channels) NDArray image, got %s"
                         % (getattr(src, "shape", type(src).__name__),))
    return src.asnumpy()


def imdecode(buf, flag: int = 1, to_rgb: bool = True, out: Optional[NDArray] = None) -> NDArray:
    """An encoded image (bytes, or a uint8 NDArray of them) as an (h, w, c) uint8 NDArray:
    colour (flag 1, RGB unless to_rgb is False) or grayscale (flag 0, one channel)."""
    cv2 = _cv2()
    raw = buf.asnumpy().astype(np.uint8) if isinstance(buf, NDArray) else np.frombuffer(
        bytes(buf), np.uint8)
    img = cv2.imdecode(raw, cv2.IMREAD_COLOR if flag else cv2.IMREAD_GRAYSCALE)
    if img is None:
        raise MXNetError("imdecode: the buffer (%d bytes) is not an image OpenCV decodes"
                         % raw.size)
    if flag and to_rgb:
        img = img[:, :, ::-1]
    result = _image(np.ascontiguousarray(img))
    if out is not None:
        out[:] = result
        return out
    return result


def imread(filename: str, flag: int = 1, to_rgb: bool = True,
           out: Optional[NDArray] = None) -> NDArray:
    """The image file `filename`, decoded as `imdecode` does."""
    try:
        with open(filename, "rb") as f:
            data = f.read()
    except OSError as err:
        raise MXNetError("imread: cannot read '%s': %s" % (filename, err.strerror)) from None
    return imdecode(data, flag, to_rgb, out)


def imresize(src: NDArray, w: int, h: int, interp: int = 1, out: Optional[NDArray] = None
             ) -> NDArray:
    """`src` resized to w x h with interpolation `interp` (0-4)."""
    if interp not in (0, 1, 2, 3, 4):
        raise MXNetError("imresize: interp=%r is not one of 0-4" % (interp,))
    img = _cv2().resize(_pixels(src), (int(w), int(h)), interpolation=interp)
    result = _image(img, src)
    if out is not None:
        out[:] = result
        return out
    return result


def scale_down(src_size: tuple, size: tuple) -> tuple:
    """(w, h) of `size` scaled down, aspect kept, to fit in `src_size` (w, h)."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def copyMakeBorder(src: NDArray, top: int, bot: int, left: int, right: int, type: int = 0,
                   value: float = 0.0, values=(), out: Optional[NDArray] = None) -> NDArray:
    """`src` with a border of OpenCV's `type` (0: the constant `value`, or per channel
    `values`)."""
    fill = list(values) if len(values) else [value] * 4
    img = _cv2().copyMakeBorder(_pixels(src), top, bot, left, right, type, value=fill)
    result = _image(img, src)
    if out is not None:
        out[:] = result
        return out
    return result


def _get_interp_method(interp: int, sizes: tuple = ()) -> int:
    """The interpolation for a resize of (old h, old w, new h, new w) `sizes`."""
    if interp == 9:
        if sizes:
            oh, ow, nh, nw = sizes
            if nh > oh and nw > ow:
                return 2
            if nh < oh and nw < ow:
                return 3
            return 1
        return 2
    if interp == 10:
        return random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError("Unknown interp method %d" % interp)
    return interp


def resize_short(src: NDArray, size: int, interp: int = 2) -> NDArray:
    """`src` resized so its shorter edge is `size`, aspect kept (whole pixels, rounded down)."""
    h, w = src.shape[:2]
    new_h, new_w = (size * h // w, size) if h > w else (size, size * w // h)
    return imresize(src, new_w, new_h, interp=_get_interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src: NDArray, x0: int, y0: int, w: int, h: int, size: Optional[tuple] = None,
               interp: int = 2) -> NDArray:
    """The w x h window of `src` at (x0, y0), resized to `size` (w, h) when given."""
    out = src[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        sizes = (h, w, size[1], size[0])
        out = imresize(out, *size, interp=_get_interp_method(interp, sizes))
    return out


def random_crop(src: NDArray, size: tuple, interp: int = 2) -> tuple:
    """(a window of `size` (w, h) at a random place, (x0, y0, w, h)); an image smaller than
    `size` gives its largest window of that aspect, resized up."""
    h, w = src.shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def center_crop(src: NDArray, size: tuple, interp: int = 2) -> tuple:
    """(the centre window of `size` (w, h), (x0, y0, w, h)), as random_crop's."""
    h, w = src.shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0, y0 = int((w - new_w) / 2), int((h - new_h) / 2)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def color_normalize(src: NDArray, mean, std=None) -> NDArray:
    """src - mean, divided by std when given (in place on `src`, as MXNet's)."""
    if mean is not None:
        src -= mean
    if std is not None:
        src /= std
    return src


def random_size_crop(src: NDArray, size: tuple, area, ratio: tuple, interp: int = 2,
                     **kwargs) -> tuple:
    """(a random window of a random area fraction in `area` and aspect in `ratio`, resized to
    `size`, (x0, y0, w, h)); after ten draws that do not fit, the centre crop."""
    h, w = src.shape[:2]
    if "min_area" in kwargs:
        area = kwargs.pop("min_area")
    if kwargs:
        raise TypeError("random_size_crop: unexpected arguments %s" % sorted(kwargs))
    if isinstance(area, Number):
        area = (area, 1.0)
    log_ratio = (np.log(ratio[0]), np.log(ratio[1]))
    for _ in range(10):
        target_area = random.uniform(area[0], area[1]) * h * w
        new_ratio = np.exp(random.uniform(*log_ratio))
        new_w = int(round(np.sqrt(target_area * new_ratio)))
        new_h = int(round(np.sqrt(target_area / new_ratio)))
        if new_w <= w and new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)
