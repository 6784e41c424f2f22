"""What ImageRecordIter and ImageDetRecordIter share below the iterator: locating and reading
the records of a RecordIO file (`record_offsets`, `part_records`, `read_record`), im2rec list
files (`read_imglist`), which of MXNet's parameters are honoured, ignored or refused
(`check_arguments`), and MXNet's choice of interpolation by the resize
(`auto_interpolation`, which `mx.image` uses too)."""
from __future__ import annotations

import os
import struct

import numpy as np

from ..base import MXNetError
from .base import DataIterError
from .image_colour import COLOUR_DEFAULTS, check_colour

__all__ = ["record_offsets", "part_records", "read_record", "read_imglist", "per_channel",
           "check_arguments", "AFFINE_DEFAULTS", "RESIZED_CROP_DEFAULTS", "CROP_SIZE_DEFAULTS",
           "auto_interpolation"]

#: parameters of MXNet's random augmenters that are accepted only at their default value
_REFUSED = dict(max_random_contrast=0.0, max_random_illumination=0.0, aug_seq="aug_default")
#: the square crop's side range (both -1: off)
CROP_SIZE_DEFAULTS = dict(min_crop_size=-1, max_crop_size=-1)
#: the random resized crop's switch and area range (its aspect range is the affine one's)
RESIZED_CROP_DEFAULTS = dict(random_resized_crop=False, min_random_area=1.0,
                             max_random_area=1.0)
#: the affine augmentation's parameters and their defaults (no transformation)
AFFINE_DEFAULTS = dict(rotate=-1, max_rotate_angle=0, max_shear_ratio=0.0, min_random_scale=1.0,
               max_random_scale=1.0, max_aspect_ratio=0.0, min_aspect_ratio=None,
               max_img_size=1e10, min_img_size=0.0)
#: what is accepted and changes nothing here (device placement, logging, MXNet's chunking)
_IGNORED = ("verbose", "device_id", "ctx", "shuffle_chunk_size", "shuffle_chunk_seed",
            "path_imgidx", "seed_aug")


def record_offsets(path: str) -> tuple:
    """(byte offset of every record of the RecordIO file, the file's size), from the record
    headers alone (payloads are skipped, not read)."""
    offsets = []
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        pos = 0
        while pos + 8 <= size:
            f.seek(pos)
            magic, word = struct.unpack("<II", f.read(8))
            if magic != 0xCED7230A:
                raise MXNetError("'%s' is not a RecordIO file: no record at byte %d"
                                 % (path, pos))
            if word >> 29 in (0, 1):  # a whole record, or its first part
                offsets.append(pos)
            length = word & ((1 << 29) - 1)
            if pos + 8 + length > size:
                raise MXNetError("'%s' is truncated: the record at byte %d holds %d bytes, the "
                                 "file ends %d bytes after its header"
                                 % (path, pos, length, size - pos - 8))
            pos += 8 + length + (-length % 4)
    if pos < size:
        raise MXNetError("'%s' ends with %d stray bytes after its last record" % (path,
                                                                              size - pos))
    return offsets, size


def part_records(offsets: list, size: int, num_parts: int, part_index: int) -> list:
    """Indices of the records of part `part_index`: MXNet splits the file into num_parts
    byte ranges of ceil(size / num_parts) bytes (rounded up to 4) and a part holds the records
    that start in its range."""
    step = -(-size // num_parts)
    step += -step % 4
    begin, end = min(part_index * step, size), min((part_index + 1) * step, size)
    return [i for i, off in enumerate(offsets) if begin <= off < end]


def _check_names(kwargs: dict) -> None:
    """A DataIterError for a parameter MXNet's iterator does not have, or one minimod
    accepts only at its default."""
    for key, value in kwargs.items():
        if key in _IGNORED or key in AFFINE_DEFAULTS or key in COLOUR_DEFAULTS \
                or key in RESIZED_CROP_DEFAULTS or key in CROP_SIZE_DEFAULTS:
            continue
        if key not in _REFUSED:
            raise DataIterError("ImageRecordIter has no parameter %r" % key)
        if value != _REFUSED[key] and value is not None and value != "":
            raise DataIterError(
                "ImageRecordIter: %s=%r is not supported by minimod (supported augmentations: "
                "resize, rotation, shear, scale, aspect, pad/fill_value, rand_crop, mirror, "
                "rand_mirror, min/max_crop_size, random_resized_crop, random_h/s/l, "
                "brightness, contrast, saturation, pca_noise, mean/std/scale, mean_img)"
                % (key, value))


def _augmentations(kwargs: dict, channels: int, inter_method: int) -> tuple:
    """The affine, colour, random-resized-crop and crop-size settings, checked."""
    affine = {k: kwargs.get(k, v) for k, v in AFFINE_DEFAULTS.items()}
    if (affine["max_rotate_angle"] < 0 or affine["max_shear_ratio"] < 0
            or min(affine["min_random_scale"], affine["max_random_scale"]) <= 0
            or affine["max_aspect_ratio"] < 0):
        raise DataIterError("ImageRecordIter: max_rotate_angle=%r, max_shear_ratio=%r and "
                            "max_aspect_ratio=%r must be >= 0 and the random scales > 0"
                            % (affine["max_rotate_angle"], affine["max_shear_ratio"],
                               affine["max_aspect_ratio"]))
    if affine != AFFINE_DEFAULTS and inter_method == 0:
        raise DataIterError("ImageRecordIter: inter_method=0 cannot warp an image (rotation, "
                            "shear, scale, aspect): use 1-4, 9 or 10, as MXNet requires")
    crop = {k: kwargs.get(k, v) for k, v in RESIZED_CROP_DEFAULTS.items()}
    if not 0 < crop["min_random_area"] <= crop["max_random_area"] <= 1:
        raise DataIterError("ImageRecordIter: min_random_area=%r and max_random_area=%r must "
                            "satisfy 0 < min <= max <= 1" % (crop["min_random_area"],
                                                             crop["max_random_area"]))
    colour = {k: kwargs.get(k, v) for k, v in COLOUR_DEFAULTS.items()}
    why = check_colour(colour, channels)
    if why:
        raise DataIterError("ImageRecordIter: " + why)
    return (affine, colour, crop if crop["random_resized_crop"] else None,
            _crop_sizes(kwargs))


def _crop_sizes(kwargs: dict):
    """(min, max) side of the square crop, or None when off. MXNet's iterator fails inside
    OpenCV when only one of the two is given; minimod asks for both."""
    low = kwargs.get("min_crop_size", -1)
    high = kwargs.get("max_crop_size", -1)
    if low == high == -1:
        return None
    if not 0 < low <= high:
        raise DataIterError("ImageRecordIter: min_crop_size=%r and max_crop_size=%r must both "
                            "be given, with 0 < min <= max" % (low, high))
    return int(low), int(high)


def check_arguments(kwargs: dict, path_imgrec, data_shape, batch_size, label_width,
                    num_parts, part_index, inter_method) -> tuple:
    """The affine, colour, random-resized-crop and crop-size settings (the last two None
    when off), after a DataIterError naming the first parameter MXNet's iterator takes but
    minimod cannot honour, or that has no valid value."""
    _check_names(kwargs)
    if not path_imgrec or not os.path.isfile(path_imgrec):
        raise DataIterError("ImageRecordIter: path_imgrec %r is not a file" % path_imgrec)
    if data_shape is None or len(tuple(data_shape)) != 3 or tuple(data_shape)[0] not in (
            1, 3, 4):
        raise DataIterError("ImageRecordIter: data_shape must be (channels, height, width) "
                            "with 1, 3 or 4 channels, got %r" % (data_shape,))
    if batch_size < 1 or label_width < 1 or not 0 <= part_index < num_parts:
        raise DataIterError("ImageRecordIter: batch_size=%r, label_width=%r, part_index=%r of "
                            "num_parts=%r" % (batch_size, label_width, part_index, num_parts))
    if inter_method not in (0, 1, 2, 3, 4, 9, 10):
        raise DataIterError("ImageRecordIter: inter_method=%r is not one of 0-4, 9, 10"
                            % inter_method)
    return _augmentations(kwargs, tuple(data_shape)[0], inter_method)


def read_imglist(path: str) -> dict:
    """{image index: (its labels, float64, its image path)} of an im2rec list file
    ("index<TAB>labels...<TAB>path" lines, in file order; blank lines are skipped), which
    ImageRecordIter (a record takes the labels of its header's id, as in MXNet) and
    mx.image.ImageIter read."""
    entries = {}
    try:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                fields = line.strip().split("\t")
                if len(fields) < 3:
                    if not line.strip():
                        continue
                    raise DataIterError("path_imglist '%s' line %d is not "
                                        "'index<TAB>labels<TAB>path'" % (path, number))
                entries[int(fields[0])] = (np.array(fields[1:-1], np.float64), fields[-1])
    except OSError as err:
        raise DataIterError("cannot read path_imglist '%s': %s"
                            % (path, err.strerror)) from None
    return entries


def per_channel(rgba: tuple, channels: int) -> np.ndarray:
    """The (channels, 1, 1) values of RGB(A) parameters (a grey image takes the red one)."""
    return np.array(rgba[:channels], np.float32).reshape(channels, 1, 1)


def read_record(f, offset: int) -> bytes:
    """The payload of the record at `offset` (parts joined around the magic number)."""
    f.seek(offset)
    parts = []
    while True:
        head = f.read(8)
        magic, word = struct.unpack("<II", head) if len(head) == 8 else (None, 0)
        length = word & ((1 << 29) - 1)
        data = f.read(length)
        if magic != 0xCED7230A or len(data) != length:
            raise MXNetError("RecordIO file '%s': the record at byte %d is cut short or "
                             "overwritten" % (f.name, offset))
        parts.append(data)
        f.read(-length % 4)
        if word >> 29 in (0, 3):
            return struct.pack("<I", 0xCED7230A).join(parts)


def auto_interpolation(old: tuple, new: tuple) -> int:
    """MXNet's interpolation 9 for a resize from `old` to `new` (both (w, h), or both
    (h, w)): bicubic (2) to enlarge both sides, area (3) to shrink both, bilinear (1)
    otherwise."""
    if new[0] > old[0] and new[1] > old[1]:
        return 2
    if new[0] < old[0] and new[1] < old[1]:
        return 3
    return 1
