"""The image operators of `mx.nd.image` / `mx.sym.image` (MXNet's `_image_*`), on
(H, W, C) images, or (N, H, W, C) batches where MXNet takes them, C = 1 or 3:

- to_tensor: (C, H, W) float32 in [0, 1] (x / 255); crop(x, y, width, height); resize(size
  (w, h) or one int, keep_ratio: the short side to an int size, the other scaled down to a
  whole pixel; interp as OpenCV's codes, with OpenCV as MXNet does);
- flip_left_right, flip_top_bottom and their random_ forms (probability 1/2);
- random_brightness (x * f), random_contrast (x * f + (1 - f) * the image's mean grey),
  random_saturation (x * f + (1 - f) * each pixel's grey), random_hue (the hue turned by
  f * 360 degrees in HLS space), with f uniform in [min_factor, max_factor];
  random_color_jitter (brightness, contrast and saturation factors in 1 +- their value, hue
  in +-hue, in a random order); adjust_lighting (AlexNet's: the RGB offset of ImageNet's
  principal components weighted by alpha times the eigenvalues) and random_lighting (alpha
  from N(0, alpha_std)). Grey is 0.299 R + 0.587 G + 0.114 B. Integer images are computed in
  float32 and saturated back.

Checked against MXNet 1.9.1's outputs (tests/data/imageops). Where MXNet has a bug, minimod
computes what the parameters say: MXNet's random_saturation mixes each pixel with 0.114 B
alone instead of its grey (docs/compatibility.md). Only crop and the fixed flips carry a
gradient, as in MXNet.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .. import backend
from ..base import MissingDependencyError, ShapeError
from .helpers import param_error
from .registry import NoAttrs, Op, fmt_shape, register

#: the grey (luma) weights of R, G and B, which every image augmentation uses
GREY_WEIGHTS = (0.299, 0.587, 0.114)
#: ImageNet's RGB statistics: the `mean`/`std` True of the augmenter lists, and the principal
#: components of AlexNet's lighting noise (eigenvalues, eigenvectors as columns)
IMAGENET_MEAN = (123.68, 116.28, 103.53)
IMAGENET_STD = (58.395, 57.12, 57.375)
IMAGENET_EIGVAL = np.array([55.46, 4.794, 1.148])
IMAGENET_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                            [-0.5836, -0.6948, 0.4203]])


def _cv2():
    try:
        import cv2
    except ImportError:
        raise MissingDependencyError("mx.nd.image.resize and random_hue need OpenCV (pip "
                                     "install 'minimod[image]')") from None
    return cv2


def _check_image(op: Op, shape, batch: bool):
    if shape is None:
        return
    ranks = (3, 4) if batch else (3,)
    if len(shape) not in ranks or shape[-1] not in (None, 1, 3):
        raise ShapeError("%s: input 'data' has shape %s; it must be (H, W, C)%s with C = 1 or "
                         "3" % (op.name, fmt_shape(shape), " or (N, H, W, C)" if batch else ""))


def _saturated(xp, values, out) -> None:
    if out.dtype.kind in "iu":
        info = np.iinfo(out.dtype)
        values = xp.clip(values, info.min, info.max)
    out[...] = values.astype(out.dtype)


def _draw(xp, low: float, high: float) -> float:
    return low + (high - low) * float(backend.uniform(xp, (1,))[0])


class _ImageOp(Op):
    """An operator on one image: checks the shape, keeps it, has no gradient."""

    batch = False
    differentiable = False
    backward_inputs = ()
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        _check_image(self, in_shapes[0], self.batch)
        return self.same_shape(in_shapes, out_shapes)


@register
class ImageToTensor(_ImageOp):
    name = "_image_to_tensor"
    Attrs = NoAttrs
    batch = True

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        _check_image(self, data, True)
        if data is not None:
            self.set_out(out_shapes, 0, tuple(data[:-3]) + (data[-1],) + tuple(data[-3:-1]))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        return in_types, [np.dtype(np.float32)]

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        axes = (2, 0, 1) if x.ndim == 3 else (0, 3, 1, 2)
        out[0][...] = xp.transpose(x, axes).astype(np.float32) / np.float32(255)


@dataclasses.dataclass(frozen=True)
class ImageCropAttrs:
    x: int
    y: int
    width: int
    height: int


@register
class ImageCrop(_ImageOp):
    name = "_image_crop"
    Attrs = ImageCropAttrs
    batch = True
    differentiable = True

    def infer_shape(self, in_shapes, out_shapes):
        data, a = in_shapes[0], self.attrs
        _check_image(self, data, True)
        if data is not None:
            h, w = data[-3], data[-2]
            if (h is not None and a.y + a.height > h) or (w is not None and a.x + a.width > w) \
                    or min(a.x, a.y) < 0 or min(a.width, a.height) < 1:
                raise param_error(self.name, "the window x=%d, y=%d, width=%d, height=%d is not "
                                  "inside the image %s" % (a.x, a.y, a.width, a.height,
                                                           fmt_shape(data)))
            self.set_out(out_shapes, 0, tuple(data[:-3]) + (a.height, a.width, data[-1]))
        return in_shapes, out_shapes

    def _window(self):
        a = self.attrs
        return (Ellipsis, slice(a.y, a.y + a.height), slice(a.x, a.x + a.width), slice(None))

    def forward(self, xp, inputs, aux, out, is_train):
        out[0][...] = inputs[0][self._window()]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            in_grads[0][...] = 0
            in_grads[0][self._window()] = out_grads[0]


@dataclasses.dataclass(frozen=True)
class ImageResizeAttrs:
    size: tuple[int, ...] = ()
    keep_ratio: bool = False
    interp: int = 1


@register
class ImageResize(_ImageOp):
    name = "_image_resize"
    Attrs = ImageResizeAttrs
    batch = True

    def _target(self, h: int, w: int) -> tuple:
        """(new h, new w)."""
        size = tuple(self.attrs.size)
        if len(size) == 2:
            return size[1], size[0]
        if len(size) != 1 or size[0] < 1:
            raise param_error(self.name, "size=%s must be one int or (width, height)" % (size,))
        if not self.attrs.keep_ratio:
            return size[0], size[0]
        if h <= w:
            return size[0], int(w * size[0] / h)
        return int(h * size[0] / w), size[0]

    def infer_shape(self, in_shapes, out_shapes):
        data = in_shapes[0]
        _check_image(self, data, True)
        if data is not None and data[-3] is not None and data[-2] is not None:
            self.set_out(out_shapes, 0, tuple(data[:-3]) + self._target(data[-3], data[-2])
                         + (data[-1],))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        cv2 = _cv2()
        x = backend.asnumpy(inputs[0])
        h, w = self._target(x.shape[-3], x.shape[-2])
        images = x.reshape((-1,) + x.shape[-3:])
        resized = [cv2.resize(img, (w, h), interpolation=self.attrs.interp)
                   .reshape(h, w, x.shape[-1]) for img in images]
        out[0][...] = xp.asarray(np.stack(resized).reshape(out[0].shape))


class _Flip(_ImageOp):
    axis = 1
    random = False

    def forward(self, xp, inputs, aux, out, is_train):
        flip = not self.random or _draw(xp, 0, 1) < 0.5
        out[0][...] = xp.flip(inputs[0], axis=self.axis) if flip else inputs[0]


@register
class ImageFlipLeftRight(_Flip):
    name = "_image_flip_left_right"
    Attrs = NoAttrs
    differentiable = True

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            in_grads[0][...] = xp.flip(out_grads[0], axis=self.axis)


@register
class ImageFlipTopBottom(ImageFlipLeftRight):
    name = "_image_flip_top_bottom"
    axis = 0


@register
class ImageRandomFlipLeftRight(_Flip):
    name = "_image_random_flip_left_right"
    Attrs = NoAttrs
    random = True


@register
class ImageRandomFlipTopBottom(_Flip):
    name = "_image_random_flip_top_bottom"
    Attrs = NoAttrs
    axis = 0
    random = True


def _grey(xp, x):
    if x.shape[-1] == 1:
        return x
    weights = xp.asarray(GREY_WEIGHTS, dtype=np.float32)
    return (x @ weights)[..., None]


def _brightness(xp, cv2, x, f):
    return x * np.float32(f)


def _contrast(xp, cv2, x, f):
    return x * np.float32(f) + np.float32(1 - f) * _grey(xp, x).mean()


def _saturation(xp, cv2, x, f):
    return x * np.float32(f) + np.float32(1 - f) * _grey(xp, x)


def _hue(xp, cv2, x, f):
    if x.shape[-1] == 1:
        return x
    hls = cv2.cvtColor(backend.asnumpy(x) / np.float32(255), cv2.COLOR_RGB2HLS)
    hls[..., 0] = (hls[..., 0] + np.float32(f * 360)) % np.float32(360)
    return xp.asarray(cv2.cvtColor(hls, cv2.COLOR_HLS2RGB) * np.float32(255))


@dataclasses.dataclass(frozen=True)
class ImageFactorAttrs:
    min_factor: float
    max_factor: float


class _Factor(_ImageOp):
    """x adjusted by a factor drawn in [min_factor, max_factor]."""

    Attrs = ImageFactorAttrs
    adjust = staticmethod(_brightness)

    def forward(self, xp, inputs, aux, out, is_train):
        f = _draw(xp, self.attrs.min_factor, self.attrs.max_factor)
        cv2 = _cv2() if self.adjust is _hue else None
        _saturated(xp, self.adjust(xp, cv2, inputs[0].astype(np.float32), f), out[0])


@register
class ImageRandomBrightness(_Factor):
    name = "_image_random_brightness"


@register
class ImageRandomContrast(_Factor):
    name = "_image_random_contrast"
    adjust = staticmethod(_contrast)


@register
class ImageRandomSaturation(_Factor):
    name = "_image_random_saturation"
    adjust = staticmethod(_saturation)


@register
class ImageRandomHue(_Factor):
    name = "_image_random_hue"
    adjust = staticmethod(_hue)


@dataclasses.dataclass(frozen=True)
class ImageColorJitterAttrs:
    brightness: float
    contrast: float
    saturation: float
    hue: float


@register
class ImageRandomColorJitter(_ImageOp):
    name = "_image_random_color_jitter"
    Attrs = ImageColorJitterAttrs

    def forward(self, xp, inputs, aux, out, is_train):
        a = self.attrs
        steps = [(fn, 1 - v, 1 + v) for fn, v in ((_brightness, a.brightness),
                                                   (_contrast, a.contrast),
                                                   (_saturation, a.saturation)) if v > 0]
        if a.hue > 0:
            steps.append((_hue, -a.hue, a.hue))
        x = inputs[0].astype(np.float32)
        cv2 = _cv2() if a.hue > 0 else None
        order = sorted(range(len(steps)), key=lambda _: _draw(xp, 0, 1))
        for k in order:
            fn, low, high = steps[k]
            x = fn(xp, cv2, x, _draw(xp, low, high))
        _saturated(xp, x, out[0])


@dataclasses.dataclass(frozen=True)
class ImageAdjustLightingAttrs:
    alpha: tuple[float, ...]


def _lighting(xp, x, alpha, out) -> None:
    if x.shape[-1] != 3:
        raise ShapeError("lighting needs 3-channel images, got %s" % fmt_shape(x.shape))
    offset = IMAGENET_EIGVEC @ (np.asarray(alpha, np.float64) * IMAGENET_EIGVAL)
    _saturated(xp, x.astype(np.float32) + xp.asarray(offset, dtype=np.float32), out)


@register
class ImageAdjustLighting(_ImageOp):
    name = "_image_adjust_lighting"
    Attrs = ImageAdjustLightingAttrs

    def forward(self, xp, inputs, aux, out, is_train):
        if len(self.attrs.alpha) != 3:
            raise param_error(self.name, "alpha=%s must have 3 values" % (self.attrs.alpha,))
        _lighting(xp, inputs[0], self.attrs.alpha, out[0])


@dataclasses.dataclass(frozen=True)
class ImageRandomLightingAttrs:
    alpha_std: float = 0.05


@register
class ImageRandomLighting(_ImageOp):
    name = "_image_random_lighting"
    Attrs = ImageRandomLightingAttrs

    def forward(self, xp, inputs, aux, out, is_train):
        u = backend.asnumpy(backend.uniform(xp, (6,))).astype(np.float64)
        normal = np.sqrt(-2 * np.log(1 - u[:3])) * np.cos(2 * math.pi * u[3:])  # Box-Muller
        _lighting(xp, inputs[0], normal * self.attrs.alpha_std, out[0])

