"""`mx.io.ImageRecordIter`: batches of images decoded from an image RecordIO file (`.rec`, as
im2rec.py and `mx.recordio.pack_img` write them), as MXNet 1.9.1's iterator gives them.

Each record holds an `IRHeader` (its label, or `flag` labels) and an encoded image, decoded
with OpenCV (the `opencv-python-headless` package, the `image` extra; MXNet decodes with
OpenCV too). Per image, in MXNet's order: decode (grayscale for 1 channel, colour for 3),
`resize` the shorter edge, `pad` with `fill_value`, crop `data_shape` (the centre, or a random
window with `rand_crop`; an image smaller than the crop is first scaled up, keeping its
aspect, to cover it), out = (pixel - mean) / std * scale per channel in RGB order (mean:
`mean_r/g/b/a`, or the image in file `mean_img`, which a first pass over the data writes when
it does not exist, as MXNet's does), then a flip (`mirror`, or at random with `rand_mirror`;
after the mean image is taken off, as in MXNet), cast to `dtype`. The colour augmentations
(`random_h/s/l` in HLS space, then `brightness`, `contrast`, `saturation` and `pca_noise`)
come after the crop and before the mean (image_colour.py; minimod's own draws).
`inter_method` 9 picks the interpolation by the resize, as MXNet does (bicubic to enlarge,
area to shrink, bilinear otherwise; for the scaling that covers the crop MXNet compares each
new side with the other old one, and so does minimod), 10 draws one. Tests compare every
configuration without random draws with MXNet's batches (tests/data/io/image_record_golden.npz).

Batches keep MXNet's order and epochs: `num_parts` splits the file into byte ranges, each
part holding the records that start in its range; with `round_batch` the last batch of an
epoch is completed from the start of the data (its `pad` counts those) and the next epoch
starts after them, as MXNet's does. `shuffle` visits the records in a new random order every
epoch (seeded by `seed`; the order is minimod's, not MXNet's). `preprocess_threads` decode in
parallel (OpenCV releases the GIL) and `prefetch_buffer` batches are prepared ahead.

Where minimod bends MXNet: without `round_batch`, the last batch's missing rows are zeros and
its `pad` counts them (MXNet leaves uninitialised memory there and reports a pad of 0). The
`aug_seq` is refused with a message. `min/max_crop_size` crop a square of a random side in
that range (centred, or at a random place with `rand_crop`) and resize it to the data shape,
as MXNet does. `random_resized_crop`
takes a window of area fraction in [min_random_area, max_random_area] and aspect in the
aspect range (min/max_aspect_ratio, which then belong to the crop; the random scale is not
used), after the resize, rotation, shear and pad, and resizes it to the data shape. The
affine augmentation (`rotate`, `max_rotate_angle`, `max_shear_ratio`,
`min/max_random_scale`, `min/max_aspect_ratio`, `min/max_img_size`) warps about the centre
after the resize and before the pad, exactly as MXNet's when its draws are fixed. With
`path_imglist` a record's labels are those the list gives its header's id, as in MXNet.
"""
from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

import numpy as np

from ..base import MXNetError
from ..context import Context
from ..ndarray import array as nd_array
from ..ndarray.core import wrap
from ..ndarray.serialization import load as nd_load
from ..ndarray.serialization import save as nd_save
from ..recordio import opencv, unpack
from .base import DataBatch, DataDesc, DataIterError, MXDataIter
from .image_colour import colour_jitter, hsl_jitter
from .image_files import (
    AFFINE_DEFAULTS,
    auto_interpolation,
    check_arguments,
    part_records,
    per_channel,
    read_imglist,
    read_record,
    record_offsets,
)
from .image_windows import crop_aspect, resized_crop_window

__all__ = ["ImageRecordIter"]


class ImageRecordIter(MXDataIter):
    """Batches (data (batch, c, h, w), label (batch,) or (batch, label_width)) of the images of
    a RecordIO file; see the module docstring for the pipeline and MXNet's parameters."""

    def __init__(self, path_imgrec: str = "", data_shape: Optional[tuple] = None,
                 batch_size: int = 0, label_width: int = 1, preprocess_threads: int = 4,
                 num_parts: int = 1, part_index: int = 0, shuffle: bool = False, seed: int = 0,
                 round_batch: bool = True, prefetch_buffer: int = 4, dtype: Optional[str] = None,
                 resize: int = -1, rand_crop: bool = False, rand_mirror: bool = False,
                 mirror: bool = False, mean_img: str = "", mean_r: float = 0.0,
                 mean_g: float = 0.0, mean_b: float = 0.0, mean_a: float = 0.0,
                 std_r: float = 1.0, std_g: float = 1.0, std_b: float = 1.0,
                 std_a: float = 1.0, scale: float = 1.0, pad: int = 0, fill_value: int = 255,
                 inter_method: int = 1, data_name: str = "data",
                 label_name: str = "softmax_label", path_imglist: str = "", **kwargs: Any):
        super().__init__(batch_size)
        affine, self._colour, self._resized_crop, self._crop_sizes = check_arguments(
            kwargs, path_imgrec, data_shape, batch_size, label_width, num_parts, part_index,
            inter_method)
        self._crop_aspect, self._affine = crop_aspect(affine, self._resized_crop)
        self._cv2 = opencv()
        self.path, self.shape = path_imgrec, tuple(int(d) for d in data_shape)
        self.label_width, self.round_batch = label_width, round_batch
        self.resize, self.pad, self.fill_value = resize, pad, fill_value
        self.rand_crop, self.rand_mirror, self.mirror = rand_crop, rand_mirror, mirror
        self.inter_method, self.dtype = inter_method, np.dtype(dtype or "float32")
        self._mean = per_channel((mean_r, mean_g, mean_b, mean_a), self.shape[0])
        self._std = per_channel((std_r, std_g, std_b, std_a), self.shape[0])
        self._scale = np.float32(scale)
        offsets, size = record_offsets(path_imgrec)
        self._offsets = [offsets[i] for i in part_records(offsets, size, num_parts,
                                                          part_index)]
        self._shuffle, self._rng, self._aug_rng = (shuffle, np.random.RandomState(seed),
                                                   np.random.RandomState(seed))
        self._pool, self._files = ThreadPoolExecutor(max(1, preprocess_threads)), threading.local()
        self._labels = read_imglist(path_imglist) if path_imglist else None
        if mean_img:
            self._mean = self._mean_image(mean_img)
        self._ahead, self._start = max(1, prefetch_buffer), 0
        label_shape = (batch_size,) if label_width == 1 else (batch_size, label_width)
        self.provide_data = [DataDesc(data_name, (batch_size,) + self.shape, self.dtype.type)]
        self.provide_label = [DataDesc(label_name, label_shape, np.float32)]
        self._prepare()
        self._begin_epoch()

    def _prepare(self) -> None:
        """What a subclass settles once the records are located, before the first batch."""

    def _mean_image(self, path: str) -> np.ndarray:
        """The (c, h, w) mean image of file `path`; where there is none yet, as MXNet does,
        the mean of one pass over the data (processed with the per-channel mean, std and
        scale), written there first (atomically)."""
        if not os.path.exists(path):
            logging.info("ImageRecordIter: computing the mean image of %d records of '%s' "
                         "into '%s'", len(self._offsets), self.path, path)
            seeds = np.random.RandomState(0).randint(0, 2 ** 31 - 1, size=len(self._offsets))
            total = np.zeros(self.shape, np.float64)
            for image, _ in self._pool.map(lambda job: self._decode(*job),
                                           zip(self._offsets, ((s,) for s in seeds))):
                total += image
            mean = (total / max(1, len(self._offsets))).astype(np.float32)
            nd_save(path, {"mean_img": nd_array(mean)})
        loaded = nd_load(path)
        arr = (next(iter(loaded.values())) if isinstance(loaded, dict) else loaded[0]).asnumpy()
        if arr.shape != self.shape:
            raise DataIterError("ImageRecordIter: mean_img %r has shape %s, data_shape is %s"
                                % (path, arr.shape, self.shape))
        return arr.astype(np.float32)

    # ------------------------------------------------------------------ one image
    def _interpolation(self, old: tuple, new: tuple, rng: np.random.RandomState) -> int:
        """The interpolation of a resize from `old` to `new` (w, h): inter_method, where 9
        picks by the resize as MXNet does (`auto_interpolation`) and 10 draws one of 0-4."""
        if self.inter_method == 9:
            return auto_interpolation(old, new)
        if self.inter_method == 10:
            return int(rng.randint(0, 5))
        return self.inter_method

    def _resized(self, img: np.ndarray, size: tuple, rng: np.random.RandomState,
                 crossed: bool = False) -> np.ndarray:
        """img resized to size (w, h). `crossed` compares the new width with the old height
        and the new height with the old width when interpolation 9 picks, as MXNet does when
        it scales an image up to cover the crop."""
        old = img.shape[:2] if crossed else img.shape[1::-1]  # (h, w), or (w, h)
        return self._cv2.resize(img, size, interpolation=self._interpolation(old, size, rng))

    def _decode(self, offset: int, draws: tuple) -> tuple:
        """(image (c, h, w) float32 normalised, label) of the record at `offset`."""
        cv2 = self._cv2
        files = self._files.__dict__
        if "f" not in files:  # one open file per decoding thread
            files["f"] = open(self.path, "rb")
        header, payload = unpack(read_record(files["f"], offset))
        c, h, w = self.shape
        flag = {1: cv2.IMREAD_GRAYSCALE, 3: cv2.IMREAD_COLOR, 4: cv2.IMREAD_UNCHANGED}[c]
        img = cv2.imdecode(np.frombuffer(payload, np.uint8), flag)
        if img is None:
            raise MXNetError("ImageRecordIter: record at byte %d of '%s' is not an image "
                             "OpenCV decodes" % (offset, self.path))
        rng = np.random.RandomState(draws[0])
        label = header.label
        if self._labels is not None:
            if header.id not in self._labels:
                raise DataIterError("ImageRecordIter: record id %d of '%s' is not in "
                                    "path_imglist" % (header.id, self.path))
            label = self._labels[header.id][0]
        img, label, content = self._augment_sample(img, label, rng)
        colour = self._colour
        if colour["random_h"] or colour["random_s"] or colour["random_l"]:
            img = hsl_jitter(cv2, img, rng, colour["random_h"], colour["random_s"],
                             colour["random_l"])
        if c >= 3:  # OpenCV's BGR(A) to RGB(A)
            img = img[:, :, [2, 1, 0, 3][:c]]
        img = img.astype(np.float32)
        if colour["brightness"] or colour["contrast"] or colour["saturation"] \
                or colour["pca_noise"]:
            img = colour_jitter(img, rng, colour["brightness"], colour["contrast"],
                                colour["saturation"], colour["pca_noise"])
        out = (img.transpose(2, 0, 1) - self._mean) / self._std * self._scale
        flipped = self._flip(rng)
        if flipped:
            # flipped after the mean is taken off, as MXNet does: a mean image is subtracted
            # in the unflipped image's coordinates
            out = out[:, :, ::-1]
        return out, self._label_row(label, flipped, content)

    def _augment_sample(self, img: np.ndarray, label, rng: np.random.RandomState) -> tuple:
        """(augmented image, its label, the (h, w) the image's content fills): here the label
        is the record's, untouched, and the content the whole image."""
        img = self._augment(img, rng)
        return img, label, img.shape[:2]

    def _flip(self, rng: np.random.RandomState) -> bool:
        return bool(self.mirror or (self.rand_mirror and rng.randint(0, 2)))

    def _warped(self, img: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
        """img through MXNet's affine augmentation: shear s, rotation by an angle (`rotate`, or
        a whole number of degrees in +-max_rotate_angle), scale and aspect ratio r, about the
        centre, into an image of scale times its size (bounded by min/max_img_size), the
        uncovered part filled with fill_value."""
        p = self._affine
        shear = rng.uniform(-1, 1) * p["max_shear_ratio"]
        angle = p["rotate"] if p["rotate"] > 0 else rng.randint(-p["max_rotate_angle"],
                                                                p["max_rotate_angle"] + 1)
        scale = rng.uniform(p["min_random_scale"], p["max_random_scale"])
        if p["min_aspect_ratio"] is not None:
            ratio = rng.uniform(p["min_aspect_ratio"], p["max_aspect_ratio"])
        else:
            ratio = 1 + rng.uniform(-1, 1) * p["max_aspect_ratio"]
        cos, sin = np.cos(angle / 180.0 * np.pi), np.sin(angle / 180.0 * np.pi)
        hs = 2 * scale / (1 + ratio)
        ws = ratio * hs
        rows, cols = img.shape[:2]
        # the new size in float32, as MXNet holds it: whole pixels for the output, the
        # fraction kept for the centring
        width, height = (np.float32(max(p["min_img_size"], min(p["max_img_size"], scale * n)))
                         for n in (cols, rows))
        size = (int(width), int(height))
        m = np.array([[hs * cos - shear * sin * ws, hs * sin + shear * cos * ws, 0],
                      [-sin * ws, cos * ws, 0]], np.float32)
        m[0, 2] = (width - (m[0, 0] * cols + m[0, 1] * rows)) / 2
        m[1, 2] = (height - (m[1, 0] * cols + m[1, 1] * rows)) / 2
        inter = self._interpolation((cols, rows), size, rng)
        return self._cv2.warpAffine(img, m, size, flags=inter, borderMode=self._cv2.BORDER_CONSTANT,
                                    borderValue=[self.fill_value] * 4)

    def _augment(self, img: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
        """The decoded image resized, padded and cropped, (h, w, channels)."""
        cv2 = self._cv2
        c, h, w = self.shape
        if self.resize > 0:
            rows, cols = img.shape[:2]
            if rows < cols:
                size = (int(cols * self.resize / rows), self.resize)
            else:
                size = (self.resize, int(rows * self.resize / cols))
            img = self._resized(img, size, rng)
        if self._affine != AFFINE_DEFAULTS:
            img = self._warped(img, rng)
        if self.pad > 0:
            img = cv2.copyMakeBorder(img, self.pad, self.pad, self.pad, self.pad,
                                     cv2.BORDER_CONSTANT, value=[self.fill_value] * 4)
        if self._resized_crop is not None:
            return self._random_resized(img, rng).reshape(h, w, -1)
        side = self._crop_side(img, rng)
        if side:
            y, x = self._window(img, side, side, rng)
            return self._resized(img[y:y + side, x:x + side], (w, h), rng).reshape(h, w, -1)
        if img.shape[0] < h or img.shape[1] < w:  # scaled up, aspect kept, to cover the crop
            factor = max(h / img.shape[0], w / img.shape[1])
            img = self._resized(img, (max(w, int(img.shape[1] * factor)),
                                      max(h, int(img.shape[0] * factor))), rng, crossed=True)
        y, x = self._window(img, h, w, rng)
        return img[y:y + h, x:x + w].reshape(h, w, -1)

    def _window(self, img: np.ndarray, h: int, w: int, rng: np.random.RandomState) -> tuple:
        """(top, left) of an h x w crop: at random with rand_crop, else centred."""
        if self.rand_crop:
            return (int(rng.randint(0, img.shape[0] - h + 1)),
                    int(rng.randint(0, img.shape[1] - w + 1)))
        return (img.shape[0] - h) // 2, (img.shape[1] - w) // 2

    def _crop_side(self, img: np.ndarray, rng: np.random.RandomState) -> int:
        """The side of the square crop of min/max_crop_size (a random whole number in the
        range), or 0 when they are not set."""
        if self._crop_sizes is None:
            return 0
        low, high = self._crop_sizes
        if img.shape[0] < high or img.shape[1] < high:
            raise DataIterError("ImageRecordIter: an image of %s is smaller than "
                                "max_crop_size=%d" % (img.shape[:2], high))
        return int(rng.randint(low, high + 1))

    def _random_resized(self, img: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
        """The random resized crop's window (image_windows.py), resized to the data shape."""
        _, h, w = self.shape
        y, x, ch, cw = resized_crop_window(img.shape[:2], self._resized_crop,
                                           self._crop_aspect, (h, w), rng)
        return self._resized(img[y:y + ch, x:x + cw], (w, h), rng)

    # ------------------------------------------------------------------ batches
    def _begin_epoch(self) -> None:
        n = len(self._offsets)
        self._order = self._rng.permutation(n) if self._shuffle else np.arange(n)
        self._pending: list = []
        self._planned, self._start = self._start, 0  # an epoch left empty resets the start
        self._fill()

    def _plan_batch(self) -> Optional[tuple]:
        """(record positions, pad) of the next batch to prepare, or None at the epoch's end."""
        n, size = len(self._order), self.batch_size
        start = self._planned
        if start >= n:
            return None
        rows = list(range(start, min(start + size, n)))
        pad = size - len(rows)
        if pad and self.round_batch:
            rows += [k % n for k in range(pad)]
        self._planned = start + size
        return rows, pad

    def _fill(self) -> None:
        while len(self._pending) < self._ahead:
            plan = self._plan_batch()
            if plan is None:
                return
            rows, pad = plan
            seeds = self._aug_rng.randint(0, 2 ** 31 - 1, size=len(rows))
            jobs = [self._pool.submit(self._decode, self._offsets[self._order[r]], (s,))
                    for r, s in zip(rows, seeds)]
            self._pending.append((jobs, pad))

    def reset(self) -> None:
        for jobs, _ in self._pending:
            for job in jobs:
                job.cancel()
        self._begin_epoch()

    def next(self) -> DataBatch:
        if not self._pending:
            raise StopIteration
        jobs, pad = self._pending.pop(0)
        data = np.zeros(self.provide_data[0].shape, np.float32)
        label = np.zeros(self.provide_label[0].shape, np.float32)
        for k, job in enumerate(jobs):
            data[k], label[k] = job.result()
        # the next epoch starts after the rows this one borrowed from its start
        self._start = pad if (self.round_batch and pad) else 0
        self._fill()
        if self.dtype.kind in "iu":  # integer data saturates, as MXNet's int8 iterator's
            info = np.iinfo(self.dtype)
            np.clip(data, info.min, info.max, out=data)
        host = Context("cpu", 0)  # the batch's own arrays become the NDArrays, uncopied
        return DataBatch(data=[wrap(data.astype(self.dtype, copy=False), host)],
                         label=[wrap(label, host)], pad=pad, index=None,
                         provide_data=self.provide_data, provide_label=self.provide_label)

    def _label_row(self, lab, flipped: bool, content: tuple):
        """The batch's label row of a record's label(s) (`content`: the image's (h, w))."""
        lab = np.asarray(lab, np.float32).reshape(-1)
        if lab.size < self.label_width:
            raise DataIterError("ImageRecordIter: a record of '%s' has %d label(s), "
                                "label_width is %d" % (self.path, lab.size, self.label_width))
        return lab[0] if self.label_width == 1 else lab[:self.label_width]

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
