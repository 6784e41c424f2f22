"""`mx.image` (also `mx.img`): MXNet's image functions, augmenters and `ImageIter`, over
(height, width, channels) NDArrays decoded with OpenCV (the `image` extra).

functions.py: imread, imdecode, imresize, scale_down, copyMakeBorder, resize_short,
fixed_crop, random_crop, center_crop, color_normalize, random_size_crop, imrotate,
random_rotate; augmenters.py: the Augmenter classes and CreateAugmenter; image_iter.py:
ImageIter (image.py, MXNet's `mx.image.image`, gathers these three); detection.py (MXNet's
`mx.image.detection`): the detection augmenters (det_augmenters.py), CreateDetAugmenter and
ImageDetIter (det_iter.py).
"""
from . import detection
from . import detection as det  # MXNet's short name of the module
from .detection import (
    CreateDetAugmenter,
    CreateMultiRandCropAugmenter,
    DetAugmenter,
    DetBorrowAug,
    DetHorizontalFlipAug,
    DetRandomCropAug,
    DetRandomPadAug,
    DetRandomSelectAug,
    ImageDetIter,
)
from .image import *  # noqa: F401,F403 - mx.image.image's names are mx.image's too
from .image import __all__ as _image_names

__all__ = _image_names + [
    "detection", "det", "DetAugmenter", "DetBorrowAug", "DetRandomSelectAug",
    "DetHorizontalFlipAug", "DetRandomCropAug", "DetRandomPadAug",
    "CreateMultiRandCropAugmenter", "CreateDetAugmenter", "ImageDetIter"]
