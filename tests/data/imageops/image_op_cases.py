"""mx.nd.image operator calls without random draws (the random_* ones with min == max
factor), written once for both libraries: each case takes the `mx` module (MXNet 1.9.1 in
gen_image_ops_golden.py, minimod in tests/ops/test_image_ops.py) and returns an NDArray."""
import numpy as np


def _hwc(seed=0, shape=(5, 6, 3), dtype=np.uint8):
    return np.random.RandomState(seed).randint(0, 256, shape).astype(dtype)


CASES = {
    "to_tensor_hwc": lambda mx: mx.nd.image.to_tensor(mx.nd.array(_hwc(), dtype="uint8")),
    "to_tensor_nhwc": lambda mx: mx.nd.image.to_tensor(mx.nd.array(_hwc(1, (2, 4, 5, 3)),
                                                                   dtype="uint8")),
    "to_tensor_float": lambda mx: mx.nd.image.to_tensor(mx.nd.array(_hwc(2, (4, 5, 1),
                                                                         np.float32))),
    "crop_hwc": lambda mx: mx.nd.image.crop(mx.nd.array(_hwc(3), dtype="uint8"), 1, 2, 4, 3),
    "crop_nhwc": lambda mx: mx.nd.image.crop(mx.nd.array(_hwc(4, (2, 5, 6, 3)), dtype="uint8"),
                                             0, 1, 3, 2),
    "resize": lambda mx: mx.nd.image.resize(mx.nd.array(_hwc(5), dtype="uint8"), (4, 7)),
    "resize_int": lambda mx: mx.nd.image.resize(mx.nd.array(_hwc(6), dtype="uint8"), 8),
    "resize_keep_ratio": lambda mx: mx.nd.image.resize(mx.nd.array(_hwc(7), dtype="uint8"), 9,
                                                       keep_ratio=True),
    "resize_nearest_nhwc": lambda mx: mx.nd.image.resize(
        mx.nd.array(_hwc(8, (2, 5, 6, 3)), dtype="uint8"), (3, 4), interp=0),
    "resize_float": lambda mx: mx.nd.image.resize(mx.nd.array(_hwc(9, (5, 6, 3), np.float32)),
                                                  (10, 8), interp=2),
    "flip_left_right": lambda mx: mx.nd.image.flip_left_right(
        mx.nd.array(_hwc(10), dtype="uint8")),
    "flip_top_bottom_nhwc": lambda mx: mx.nd.image.flip_top_bottom(
        mx.nd.array(_hwc(11, (2, 5, 6, 3)), dtype="uint8")),
    "flip_left_right_chw_float": lambda mx: mx.nd.image.flip_left_right(
        mx.nd.array(_hwc(12, (3, 4, 5), np.float32))),
    "brightness": lambda mx: mx.nd.image.random_brightness(
        mx.nd.array(_hwc(13, (5, 6, 3), np.float32)), 1.3, 1.3),
    "contrast": lambda mx: mx.nd.image.random_contrast(
        mx.nd.array(_hwc(14, (5, 6, 3), np.float32)), 0.6, 0.6),
    "saturation": lambda mx: mx.nd.image.random_saturation(
        mx.nd.array(_hwc(15, (5, 6, 3), np.float32)), 1.4, 1.4),
    "hue": lambda mx: mx.nd.image.random_hue(mx.nd.array(_hwc(16, (5, 6, 3), np.float32)),
                                             0.2, 0.2),
    "brightness_uint8": lambda mx: mx.nd.image.random_brightness(
        mx.nd.array(_hwc(17), dtype="uint8"), 1.5, 1.5),
    "adjust_lighting": lambda mx: mx.nd.image.adjust_lighting(
        mx.nd.array(_hwc(18, (5, 6, 3), np.float32)), alpha=(0.1, -0.2, 0.3)),
    "adjust_lighting_nhwc": lambda mx: mx.nd.image.adjust_lighting(
        mx.nd.array(_hwc(19, (2, 4, 5, 3), np.float32)), alpha=(0.5, 0.0, -0.1)),
}
