"""`mx.image` (also `mx.img`): MXNet's image functions, augmenters and `ImageIter`, over
(height, width, channels) NDArrays decoded with OpenCV (the `image` extra).

functions.py: imread, imdecode, imresize, scale_down, copyMakeBorder, resize_short,
fixed_crop, random_crop, center_crop, color_normalize, random_size_crop, imrotate,
random_rotate; augmenters.py: the Augmenter classes and CreateAugmenter; image_iter.py:
ImageIter; detection.py (MXNet's `mx.image.detection`): the detection augmenters
(det_augmenters.py), CreateDetAugmenter and ImageDetIter (det_iter.py).
"""
from . import detection
from . import detection as det  # MXNet's short name of the module
from .augmenters import (
    Augmenter,
    BrightnessJitterAug,
    CastAug,
    CenterCropAug,
    ColorJitterAug,
    ColorNormalizeAug,
    ContrastJitterAug,
    CreateAugmenter,
    ForceResizeAug,
    HorizontalFlipAug,
    HueJitterAug,
    LightingAug,
    RandomCropAug,
    RandomGrayAug,
    RandomOrderAug,
    RandomSizedCropAug,
    ResizeAug,
    SaturationJitterAug,
    SequentialAug,
)
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
from .functions import (
    center_crop,
    color_normalize,
    copyMakeBorder,
    fixed_crop,
    imdecode,
    imread,
    imresize,
    imrotate,
    random_crop,
    random_rotate,
    random_size_crop,
    resize_short,
    scale_down,
)
from .image_iter import ImageIter

__all__ = ["Augmenter", "BrightnessJitterAug", "CastAug", "CenterCropAug", "ColorJitterAug",
           "ColorNormalizeAug", "ContrastJitterAug", "CreateAugmenter", "ForceResizeAug",
           "HorizontalFlipAug", "HueJitterAug", "LightingAug", "RandomCropAug",
           "RandomGrayAug", "RandomOrderAug", "RandomSizedCropAug", "ResizeAug",
           "SaturationJitterAug", "SequentialAug", "center_crop", "color_normalize",
           "copyMakeBorder", "fixed_crop", "imdecode", "imread", "imresize", "imrotate",
           "random_crop", "random_rotate", "random_size_crop", "resize_short", "scale_down",
           "ImageIter", "detection", "det", "DetAugmenter", "DetBorrowAug", "DetRandomSelectAug",
           "DetHorizontalFlipAug", "DetRandomCropAug", "DetRandomPadAug",
           "CreateMultiRandCropAugmenter", "CreateDetAugmenter", "ImageDetIter"]
