"""MXNet's module path `mx.image.image`: the image functions (functions.py), the augmenters
(augmenters.py) and `ImageIter` (image_iter.py), for code that imports them from there."""
from . import augmenters, functions, image_iter
from .augmenters import *  # noqa: F401,F403 - their public names are this module's
from .functions import *  # noqa: F401,F403
from .image_iter import ImageIter  # noqa: F401

__all__ = augmenters.__all__ + functions.__all__ + image_iter.__all__
