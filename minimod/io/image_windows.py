"""ImageRecordIter's random resized crop: the aspect range it takes over from the affine
augmentation, and the window it draws (see image_record.py for where it runs)."""
from __future__ import annotations

from typing import Optional

import numpy as np

__all__ = ["crop_aspect", "resized_crop_window"]


def crop_aspect(affine: dict, resized_crop: Optional[dict]) -> tuple:
    """(the random resized crop's aspect range, the affine settings left to the warp): with
    the crop on, the aspect range is the crop's and the random scale is not used."""
    if resized_crop is None:
        return None, affine
    if affine["min_aspect_ratio"] is not None:
        span = (affine["min_aspect_ratio"], affine["max_aspect_ratio"])
    else:
        span = (1 - affine["max_aspect_ratio"], 1 + affine["max_aspect_ratio"])
    return span, dict(affine, min_aspect_ratio=None, max_aspect_ratio=0.0,
                      min_random_scale=1.0, max_random_scale=1.0)


def resized_crop_window(size: tuple, crop: dict, aspect: tuple, data_hw: tuple,
                        rng: np.random.RandomState) -> tuple:
    """(top, left, height, width) of a window of area fraction in [min_random_area,
    max_random_area] of an image of `size` (rows, cols) and w / h in `aspect`, at a random
    place; after 10 windows that do not fit, the largest centred window of the data's
    aspect (`data_hw`)."""
    rows, cols = size
    for _ in range(10):
        area = rng.uniform(crop["min_random_area"], crop["max_random_area"]) * rows * cols
        ratio = rng.uniform(*aspect)
        cw, ch = int(round(np.sqrt(area * ratio))), int(round(np.sqrt(area / ratio)))
        if 0 < cw <= cols and 0 < ch <= rows:
            return int(rng.randint(0, rows - ch + 1)), int(rng.randint(0, cols - cw + 1)), ch, cw
    h, w = data_hw
    if cols * h >= rows * w:
        ch, cw = rows, min(cols, max(1, int(round(rows * w / h))))
    else:
        ch, cw = min(rows, max(1, int(round(cols * h / w)))), cols
    return (rows - ch) // 2, (cols - cw) // 2, ch, cw
