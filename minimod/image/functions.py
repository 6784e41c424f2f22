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

from .. import ndarray as nd
from ..base import MXNetError
from ..io.image_files import auto_interpolation
from ..ndarray import NDArray
from ..ndarray import array as nd_array
from ..recordio import opencv as _cv2

__all__ = ["imread", "imdecode", "imresize", "scale_down", "copyMakeBorder", "resize_short",
           "fixed_crop", "random_crop", "center_crop", "color_normalize", "random_size_crop",
           "imrotate", "random_rotate"]


def _image(data: np.ndarray, like: Optional[NDArray] = None) -> NDArray:
    """(h, w) or (h, w, c) pixels as an (h, w, c) NDArray (on `like`'s device)."""
    data = data.reshape(data.shape[:2] + (-1,))
    return nd_array(data, ctx=None if like is None else like.context, dtype=data.dtype)


def _result(pixels: np.ndarray, like: Optional[NDArray], out: Optional[NDArray]) -> NDArray:
    """The pixels as an NDArray, written into `out` (and `out` returned) when it is given."""
    result = _image(pixels, like)
    if out is None:
        return result
    out[:] = result
    return out


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
    return _result(np.ascontiguousarray(img), None, out)


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
    return _result(img, src, out)


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
    return _result(img, src, out)


def _get_interp_method(interp: int, sizes: tuple = ()) -> int:
    """The interpolation for a resize of (old h, old w, new h, new w) `sizes`."""
    if interp == 9:
        return auto_interpolation(sizes[:2], sizes[2:]) if sizes else 2
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


def imrotate(src: NDArray, rotation_degrees, zoom_in: bool = False, zoom_out: bool = False
             ) -> NDArray:
    """float32 image(s) (c, h, w) or (n, c, h, w) rotated by `rotation_degrees` (a number, or
    one per image) about their centres, sampled bilinearly (BilinearSampler: zeros outside).
    `zoom_in` scales so that no outside shows, `zoom_out` so that the whole image does."""
    if zoom_in and zoom_out:
        raise ValueError("imrotate: zoom_in and zoom_out cannot both be True")
    if src.dtype != np.float32:
        raise TypeError("imrotate: only float32 images are supported, got %s" % src.dtype)
    single = src.ndim == 3
    if single:
        if not isinstance(rotation_degrees, Number):
            raise TypeError("imrotate: one image takes one (scalar) rotation angle")
        src = src.expand_dims(axis=0)
    elif src.ndim != 4:
        raise ValueError("imrotate: images must be (c, h, w) or (n, c, h, w), got %s"
                         % (src.shape,))
    n, _, h, w = src.shape
    degrees = np.full(n, rotation_degrees, np.float32) if isinstance(
        rotation_degrees, Number) else np.asarray(
        rotation_degrees.asnumpy() if isinstance(rotation_degrees, NDArray)
        else rotation_degrees, np.float32).reshape(-1)
    if degrees.size != n:
        raise ValueError("imrotate: %d images but %d rotation angles" % (n, degrees.size))
    rad = (np.float32(np.pi) * degrees / np.float32(180)).reshape(n, 1, 1)
    hscale, wscale = np.float32((h - 1) / 2), np.float32((w - 1) / 2)
    ys = (np.arange(h, dtype=np.float32).reshape(h, 1) - hscale) * np.ones((1, w), np.float32)
    xs = (np.arange(w, dtype=np.float32).reshape(1, w) - wscale) * np.ones((h, 1), np.float32)
    cos, sin = np.cos(rad), np.sin(rad)
    grid = np.stack([(xs * cos - ys * sin) / wscale, (xs * sin + ys * cos) / hscale], axis=1)
    if zoom_in or zoom_out:
        grid = grid * _zoom(rad.reshape(n), np.float32(h), np.float32(w), zoom_out).reshape(
            n, 1, 1, 1)
    rotated = nd.BilinearSampler(src, nd_array(grid, ctx=src.context))
    return rotated[0] if single else rotated


def _zoom(rad: np.ndarray, h, w, out: bool) -> np.ndarray:
    """Per image, the grid scale that shows the whole rotated image (`out`) or no outside."""
    rho, corner = np.sqrt(h * h + w * w), np.arctan(h / w)
    turn = np.abs(rad)
    max_x = np.maximum(np.abs(rho * np.cos(corner + turn)), np.abs(rho * np.cos(corner - turn)))
    max_y = np.maximum(np.abs(rho * np.sin(corner + turn)), np.abs(rho * np.sin(corner - turn)))
    if out:
        return np.maximum(max_x / w, max_y / h)
    return np.minimum(w / max_x, h / max_y)


def random_rotate(src: NDArray, angle_limits: tuple, zoom_in: bool = False,
                  zoom_out: bool = False) -> NDArray:
    """imrotate by angles drawn uniformly in `angle_limits` (NumPy's generator, as MXNet's:
    one draw for an image, one per image for a batch)."""
    if src.ndim == 3:
        degrees = np.random.uniform(*angle_limits)
    else:
        degrees = np.random.uniform(*angle_limits, size=src.shape[0])
    return imrotate(src, degrees, zoom_in=zoom_in, zoom_out=zoom_out)
