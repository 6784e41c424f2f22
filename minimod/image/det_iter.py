"""`mx.image.ImageDetIter`: ImageIter for object detection. A sample's raw label is
[header width A, object width B, (A - 2 more header values), then B values per object:
class, xmin, ymin, xmax, ymax, extras...], the corners relative to the image; boxes with
xmax <= xmin or ymax <= ymin are dropped when the label is read.

Batches hold (batch, max objects, B) labels, the rows after a sample's objects -1. The label
shape is estimated at construction by reading every label once (the most objects any sample
has), can be widened with `reshape(label_shape=...)`, and matched between a training and a
validation iterator with `sync_label_shape`. The default augmenters are
`CreateDetAugmenter(data_shape, **kwargs)`. A sample whose image or label is invalid, before or
after augmentation, is skipped (logged at debug level), as in MXNet. `draw_next` yields the
augmented images with their boxes drawn, for a look at what the network will see.

Batching, shuffling, partitions and the last batch follow ImageIter (image_iter.py), with its
one deliberate difference: a rolled-over batch has pad 0.
"""
from __future__ import annotations

import logging
from typing import Optional

import numpy as np

from ..base import MXNetError
from ..io.base import DataDesc
from ..ndarray import full as nd_full
from ..ops.image_ops import IMAGENET_MEAN, IMAGENET_STD
from ..recordio import opencv
from .det_augmenters import CreateDetAugmenter
from .image_iter import ImageIter

__all__ = ["ImageDetIter", "DetLabelError"]

_MEAN, _STD = np.array(IMAGENET_MEAN), np.array(IMAGENET_STD)


class DetLabelError(MXNetError, RuntimeError):
    """A detection label that cannot be read or has no valid box (the sample is skipped)."""


def parse_label(label) -> np.ndarray:
    """The (objects, object width) boxes of a raw detection label, invalid boxes dropped."""
    raw = np.asarray(label.asnumpy() if hasattr(label, "asnumpy") else label,
                     np.float32).ravel()
    if raw.size < 7:
        raise DetLabelError("detection label of %d values: it needs a header of 2 or more "
                            "and one object of 5 or more" % raw.size)
    header, width = int(raw[0]), int(raw[1])
    if header < 2 or width < 5 or (raw.size - header) % width:
        raise DetLabelError("detection label of %d values does not split into a header of "
                            "%d and objects of %d" % (raw.size, header, width))
    boxes = raw[header:].reshape(-1, width)
    valid = (boxes[:, 3] > boxes[:, 1]) & (boxes[:, 4] > boxes[:, 2])
    if not valid.any():
        raise DetLabelError("detection label without a valid box")
    return boxes[valid]


class ImageDetIter(ImageIter):
    """Batches of augmented images and their boxes; see the module docstring."""

    def __init__(self, batch_size: int, data_shape: tuple, path_imgrec: Optional[str] = None,
                 path_imglist: Optional[str] = None, path_root: Optional[str] = None,
                 path_imgidx: Optional[str] = None, shuffle: bool = False,
                 part_index: int = 0, num_parts: int = 1, aug_list: Optional[list] = None,
                 imglist: Optional[list] = None, data_name: str = "data",
                 label_name: str = "label", last_batch_handle: str = "pad", **kwargs):
        super().__init__(batch_size, data_shape, path_imgrec=path_imgrec,
                         path_imglist=path_imglist, path_root=path_root,
                         path_imgidx=path_imgidx, shuffle=shuffle, part_index=part_index,
                         num_parts=num_parts, aug_list=[], imglist=imglist,
                         data_name=data_name, label_name=label_name,
                         last_batch_handle=last_batch_handle)
        self.auglist = CreateDetAugmenter(data_shape, **kwargs) if aug_list is None \
            else aug_list
        self.label_shape = self._estimate_label_shape()
        self.provide_label = [DataDesc(label_name, (batch_size,) + self.label_shape)]

    def _estimate_label_shape(self) -> tuple:
        """(the most objects of any sample, the object width), from every label."""
        most, width = 0, None
        self.reset()
        try:
            while True:
                boxes = parse_label(self.next_sample()[0])
                most, width = max(most, boxes.shape[0]), boxes.shape[1]
        except StopIteration:
            pass
        self.hard_reset()
        if width is None:
            raise MXNetError("ImageDetIter: the data holds no sample")
        return most, width

    def _empty_label(self):
        return nd_full(self.provide_label[0].shape, -1.0)

    def _batchify(self, data, label, start: int = 0) -> int:
        i = start
        rows = self.label_shape[0]
        try:
            while i < self.batch_size:
                raw_label, raw = self.next_sample()
                try:
                    image = self.imdecode(raw)
                    self.check_valid_image(image)
                    image, boxes = self.augmentation_transform(image, parse_label(raw_label))
                    self._check_valid_label(boxes)
                except RuntimeError as err:
                    logging.debug("Invalid image or label, skipping: %s", err)
                    continue
                if boxes.shape[0] > rows:
                    raise MXNetError("ImageDetIter: a sample has %d objects and the label "
                                     "shape %s holds %d: widen it with reshape(label_shape="
                                     "...)" % (boxes.shape[0], self.label_shape, rows))
                padded = np.full(self.label_shape, -1.0, np.float32)
                padded[:boxes.shape[0]] = boxes
                data[i] = self.postprocess_data(image)
                label[i] = padded
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    @staticmethod
    def _check_valid_label(label: np.ndarray) -> None:
        if label.ndim != 2 or label.shape[1] < 5:
            raise DetLabelError("label of shape (objects, 5 or more) required, got %s"
                                % (label.shape,))
        valid = (label[:, 0] >= 0) & (label[:, 3] > label[:, 1]) & (label[:, 4] > label[:, 2])
        if not valid.any():
            raise DetLabelError("no valid box left after augmentation")

    def augmentation_transform(self, data, label):
        for aug in self.auglist:
            data, label = aug(data, label)
        return data, label

    def reshape(self, data_shape: Optional[tuple] = None,
                label_shape: Optional[tuple] = None) -> None:
        """New data and/or label shapes (the label shape may only grow)."""
        if data_shape is not None:
            self.check_data_shape(data_shape)
            self.data_shape = tuple(data_shape)
            self.provide_data = [DataDesc(self.provide_data[0].name,
                                          (self.batch_size,) + self.data_shape)]
        if label_shape is not None:
            self.check_label_shape(label_shape)
            self.label_shape = tuple(label_shape)
            self.provide_label = [DataDesc(self.provide_label[0].name,
                                           (self.batch_size,) + self.label_shape)]

    def check_label_shape(self, label_shape: tuple) -> None:
        if len(label_shape) != 2:
            raise ValueError("label_shape should have length 2, got %r" % (label_shape,))
        if label_shape[0] < self.label_shape[0]:
            raise ValueError("Attempts to reduce label count from %d to %d, not allowed."
                             % (self.label_shape[0], label_shape[0]))
        if label_shape[1] != self.label_shape[1]:
            raise ValueError("label_shape object width inconsistent: %d vs %d."
                             % (self.label_shape[1], label_shape[1]))

    def sync_label_shape(self, it: "ImageDetIter", verbose: bool = False) -> "ImageDetIter":
        """Give this iterator and `it` the same label shape (the larger object count)."""
        if not isinstance(it, ImageDetIter):
            raise TypeError("sync_label_shape needs an ImageDetIter, got %s"
                            % type(it).__name__)
        if it.label_shape[1] != self.label_shape[1]:
            raise ValueError("sync_label_shape: object widths differ (%d and %d)"
                             % (self.label_shape[1], it.label_shape[1]))
        most = max(self.label_shape[0], it.label_shape[0])
        for target in (self, it):
            if target.label_shape[0] < most:
                target.reshape(None, (most, target.label_shape[1]))
                if verbose:
                    logging.info("Resized label_shape to (%d, %d).", most,
                                 target.label_shape[1])
        return it

    def draw_next(self, color=None, thickness: int = 2, mean=None, std=None,
                  clip: bool = True, waitKey=None, window_name: str = "draw_next",
                  id2labels: Optional[dict] = None):
        """Yield the next samples, augmented, as BGR uint8 images with their boxes drawn
        (`color` in RGB, random per box when None); `mean`/`std` (True: ImageNet's) undo a
        normalization; with `waitKey`, each is also shown in an OpenCV window."""
        cv2 = opencv()
        std = _STD if std is True else std
        mean = _MEAN if mean is True else mean
        bgr = None if color is None else tuple(color)[::-1]
        while True:
            try:
                raw_label, raw = self.next_sample()
            except StopIteration:
                return
            try:
                image = self.imdecode(raw)
                self.check_valid_image(image)
                image, boxes = self.augmentation_transform(image, parse_label(raw_label))
            except RuntimeError as err:
                logging.debug("Invalid image or label, skipping: %s", err)
                continue
            drawn = _drawn(cv2, image.asnumpy().astype(np.float64), boxes, bgr, thickness,
                           mean, std, clip, id2labels)
            if waitKey is not None:
                cv2.imshow(window_name, drawn)
                cv2.waitKey(waitKey)
            yield drawn


def _drawn(cv2, image, boxes, bgr, thickness, mean, std, clip, id2labels) -> np.ndarray:
    if std is not None:
        image = image * np.asarray(std)
    if mean is not None:
        image = image + np.asarray(mean)
    image = image[:, :, ::-1]
    if clip:
        image = np.clip(image, 0, 255)
    image = np.ascontiguousarray(image.astype(np.uint8))
    height, width = image.shape[:2]
    for row in boxes:
        if row[0] < 0:
            continue
        x1, y1 = int(row[1] * width), int(row[2] * height)
        x2, y2 = int(row[3] * width), int(row[4] * height)
        box_color = bgr if bgr is not None else tuple(np.random.rand(3) * 255)
        cv2.rectangle(image, (x1, y1), (x2, y2), box_color, thickness)
        name = None if id2labels is None else id2labels.get(int(row[0]))
        if name is not None:
            font = cv2.FONT_HERSHEY_SIMPLEX
            text_height = cv2.getTextSize(str(name), font, 0.5, 2)[0][1]
            cv2.putText(image, str(name), (x1 + 5, y1 + text_height + 5), font, 0.5,
                        (255, 255, 255), 2)
    return image
