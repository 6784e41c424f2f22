"""ImageRecordIter's colour augmentations (minimod/io/image_colour.py) and its random resized
crop. Their draws are minimod's own, so each is checked by what it must leave invariant or how
it must relate the augmented image to the plain one (the same records, the same geometry)."""
import os

import numpy as np
import pytest

from minimod.io import DataIterError, ImageDetRecordIter, ImageRecordIter

cv2 = pytest.importorskip("cv2", reason="the image extra (OpenCV) is not installed")

FILES = os.path.join(os.path.dirname(__file__), "data", "io", "files")
REC = os.path.join(FILES, "images.rec")
GREY = np.array([0.299, 0.587, 0.114])


def _images(**colour):
    it = ImageRecordIter(path_imgrec=REC, data_shape=(3, 20, 20), batch_size=7, seed=5,
                         **colour)
    return next(iter(it)).data[0].asnumpy().astype(np.float64)  # (7, 3, h, w) RGB, 0..255


@pytest.fixture(scope="module")
def plain():
    """The same first batch without colour augmentation."""
    return _images()


def test_brightness_scales_each_image(plain):
    out, base = _images(brightness=0.3), plain
    ratios = []
    for o, b in zip(out, base):
        mask = b > 20
        ratio = o[mask] / b[mask]
        np.testing.assert_allclose(ratio, ratio.mean(), rtol=1e-4)
        ratios.append(ratio.mean())
    assert all(0.7 - 1e-4 <= r <= 1.3 + 1e-4 for r in ratios)
    assert np.ptp(ratios) > 0.05  # drawn per image


def test_saturation_keeps_every_pixels_grey(plain):
    out, base = _images(saturation=0.5), plain
    grey = np.einsum("nchw,c->nhw", out, GREY)
    np.testing.assert_allclose(grey, np.einsum("nchw,c->nhw", base, GREY), atol=1e-3)
    assert np.abs(out - base).max() > 1


def test_contrast_keeps_the_mean_grey_and_scales_the_rest(plain):
    out, base = _images(contrast=0.4), plain
    for o, b in zip(out, base):
        grey = np.einsum("chw,c->hw", b, GREY).mean()
        alpha = np.polyfit((b - grey).ravel(), (o - grey).ravel(), 1)[0]
        assert 0.6 - 1e-3 <= alpha <= 1.4 + 1e-3
        np.testing.assert_allclose(o, b * alpha + grey * (1 - alpha), atol=1e-3)


def test_pca_noise_adds_one_colour_per_image(plain):
    out, base = _images(pca_noise=0.1), plain
    shift = out - base
    np.testing.assert_allclose(shift, shift[:, :, :1, :1] * np.ones_like(shift), atol=1e-3)
    assert np.abs(shift).max() > 0.01


def test_hsl_offsets_stay_in_their_ranges(plain):
    out, base = _images(random_l=40), plain
    def lightness(x):
        bgr = np.clip(x[::-1].transpose(1, 2, 0), 0, 255).astype(np.uint8)
        return cv2.cvtColor(bgr, cv2.COLOR_BGR2HLS)[..., 1].astype(float)
    moves = [np.median(lightness(o) - lightness(b)) for o, b in zip(out, base)]
    assert all(abs(m) <= 41 for m in moves) and np.ptp(moves) > 5
    hue_only = _images(random_h=20)
    assert np.abs(hue_only - base).max() > 1
    both = _images(random_h=20, random_s=30, random_l=30, brightness=0.2, contrast=0.2,
                   saturation=0.2, pca_noise=0.05)
    assert both.shape == base.shape and np.isfinite(both).all()


def test_colour_settings_are_checked():
    with pytest.raises(DataIterError, match="saturation need.s. 3-channel"):
        ImageRecordIter(path_imgrec=REC, data_shape=(1, 20, 20), batch_size=2, saturation=0.1)
    with pytest.raises(DataIterError, match="random_s=-3 must be >= 0"):
        ImageRecordIter(path_imgrec=REC, data_shape=(3, 20, 20), batch_size=2, random_s=-3)
    with pytest.raises(DataIterError, match="ImageDetRecordIter has no parameter 'random_h'"):
        ImageDetRecordIter(path_imgrec=os.path.join(FILES, "detection.rec"),
                           data_shape=(3, 20, 20), batch_size=2, random_h=5)


def _gradient_rec(tmp_path, rows=40, cols=60):
    """A .rec of one PNG whose red channel is the column index and green the row index."""
    from minimod import recordio
    img = np.zeros((rows, cols, 3), np.uint8)
    img[:, :, 2] = np.arange(cols)[None, :]  # BGR: red is the last channel
    img[:, :, 1] = np.arange(rows)[:, None]
    path = str(tmp_path / "gradient.rec")
    writer = recordio.MXRecordIO(path, "w")
    writer.write(recordio.pack_img(recordio.IRHeader(0, 1.0, 0, 0), img, img_fmt=".png"))
    writer.close()
    return path


def test_random_resized_crop_takes_windows_of_the_asked_area_and_aspect(tmp_path):
    path = _gradient_rec(tmp_path)
    spans = []
    for seed in range(12):
        it = ImageRecordIter(path_imgrec=path, data_shape=(3, 16, 16), batch_size=1,
                             random_resized_crop=True, min_random_area=0.2,
                             max_random_area=0.5, min_aspect_ratio=0.75, max_aspect_ratio=1.33,
                             seed=seed, inter_method=1)
        red, green = next(iter(it)).data[0].asnumpy()[0, :2]
        width = red[:, -1].mean() - red[:, 0].mean()  # columns the window spans (less one
        height = green[-1].mean() - green[0].mean()  # output column's worth)
        area = (width * 16 / 15) * (height * 16 / 15) / (40 * 60)
        assert 0.15 <= area <= 0.55
        assert 0.6 <= width / height <= 1.6
        spans.append((red[0, 0], green[0, 0]))
    assert len(set(spans)) > 6  # windows at different places


def test_random_resized_crop_falls_back_to_the_centre(tmp_path):
    path = _gradient_rec(tmp_path)
    it = ImageRecordIter(path_imgrec=path, data_shape=(3, 20, 20), batch_size=1,
                         random_resized_crop=True, min_random_area=1.0, max_random_area=1.0,
                         inter_method=1)  # a whole-area square window never fits 40 x 60
    red, green = next(iter(it)).data[0].asnumpy()[0, :2]
    assert green[0].mean() <= 1.5 and green[-1].mean() >= 37.5  # every row
    assert 9 <= red[:, 0].mean() <= 11 and 48 <= red[:, -1].mean() <= 50  # the centre 40 cols
    with pytest.raises(DataIterError, match="min_random_area=0.5 and max_random_area=0.2"):
        ImageRecordIter(path_imgrec=path, data_shape=(3, 20, 20), batch_size=1,
                        random_resized_crop=True, min_random_area=0.5, max_random_area=0.2)


def test_crop_size_range_draws_square_sides(tmp_path):
    path = _gradient_rec(tmp_path)
    sides = set()
    for seed in range(10):
        it = ImageRecordIter(path_imgrec=path, data_shape=(3, 16, 16), batch_size=1,
                             min_crop_size=20, max_crop_size=36, rand_crop=seed % 2 == 0,
                             seed=seed, inter_method=1)
        red, green = next(iter(it)).data[0].asnumpy()[0, :2]
        width = (red[:, -1].mean() - red[:, 0].mean()) * 16 / 15
        height = (green[-1].mean() - green[0].mean()) * 16 / 15
        assert 19 <= width <= 37 and abs(width - height) <= 1.5
        sides.add(round(width))
    assert len(sides) >= 4
