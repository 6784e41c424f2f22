"""The other image-record iterators of MXNet 1.9.1, each an ImageRecordIter with its own
output type or parameter set: ImageRecordUInt8Iter (raw pixels), ImageRecordInt8Iter (the
pixels less the mean, saturated, for quantized models), and the older names
ImageRecordIter_v1 and ImageRecordUInt8Iter_v1 (the same batches, without `dtype`).
tests/test_image_record_variants.py compares each with MXNet's batches."""
from __future__ import annotations

from typing import Any

from .base import DataIterError
from .image_record import ImageRecordIter

__all__ = ["ImageRecordUInt8Iter", "ImageRecordInt8Iter", "ImageRecordIter_v1",
           "ImageRecordUInt8Iter_v1"]


_NORMALISATION = ("mean_img", "mean_r", "mean_g", "mean_b", "mean_a", "std_r", "std_g", "std_b",
                  "std_a", "scale", "dtype")


class ImageRecordUInt8Iter(ImageRecordIter):
    """MXNet's deprecated ImageRecordIter of raw pixels: uint8 data, decoded, resized, padded,
    cropped and flipped as ImageRecordIter does; as MXNet's, it takes the normalisation
    parameters and `dtype` and ignores them."""

    def __init__(self, **kwargs: Any):
        for key in _NORMALISATION:
            kwargs.pop(key, None)
        super().__init__(dtype="uint8", **kwargs)


class ImageRecordInt8Iter(ImageRecordIter):
    """MXNet's int8 ImageRecordIter (for quantized models): the pixels less the mean (per
    channel or `mean_img`), saturated to -128..127; as MXNet's, it takes `std_*` and `scale`
    and ignores them."""

    def __init__(self, **kwargs: Any):
        for key in ("std_r", "std_g", "std_b", "std_a", "scale", "dtype"):
            kwargs.pop(key, None)
        super().__init__(dtype="int8", **kwargs)


def _no_dtype(name: str, kwargs: dict) -> None:
    if "dtype" in kwargs:
        raise DataIterError("%s has no parameter 'dtype' (ImageRecordIter has)" % name)


class ImageRecordIter_v1(ImageRecordIter):  # noqa: N801 - MXNet's name
    """MXNet's older ImageRecordIter: the same batches, without the `dtype` parameter."""

    def __init__(self, **kwargs: Any):
        _no_dtype("ImageRecordIter_v1", kwargs)
        super().__init__(**kwargs)


class ImageRecordUInt8Iter_v1(ImageRecordUInt8Iter):  # noqa: N801 - MXNet's name
    """MXNet's older ImageRecordUInt8Iter: the same batches, without the `dtype` parameter."""

    def __init__(self, **kwargs: Any):
        _no_dtype("ImageRecordUInt8Iter_v1", kwargs)
        super().__init__(**kwargs)
