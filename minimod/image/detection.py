"""`mx.image.detection`, MXNet's module path for the detection pipeline: the augmenters of
det_augmenters.py and ImageDetIter of det_iter.py."""
from .det_augmenters import (
    CreateDetAugmenter,
    CreateMultiRandCropAugmenter,
    DetAugmenter,
    DetBorrowAug,
    DetHorizontalFlipAug,
    DetRandomCropAug,
    DetRandomPadAug,
    DetRandomSelectAug,
)
from .det_iter import DetLabelError, ImageDetIter

__all__ = ["DetAugmenter", "DetBorrowAug", "DetRandomSelectAug", "DetHorizontalFlipAug",
           "DetRandomCropAug", "DetRandomPadAug", "CreateMultiRandCropAugmenter",
           "CreateDetAugmenter", "ImageDetIter", "DetLabelError"]
