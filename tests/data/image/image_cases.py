"""mx.image calls written once for both libraries: each case takes the `mx` module (MXNet
1.9.1 in gen_image_golden.py, minimod in tests/image/test_image.py), seeds Python's and
NumPy's generators, and returns {name: array or text}. The images are PNG files of seeded
random pixels (encoded here, so both decode the same bytes)."""
import json
import os
import random
import struct
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "..", "io", "files")


def png(img):
    """PNG bytes of an (h, w, 3) uint8 RGB image."""
    h, w = img.shape[:2]
    raw = b"".join(b"\x00" + img[i].tobytes() for i in range(h))

    def chunk(tag, data):
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xffffffff))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def picture(seed=0, h=30, w=40):
    return np.random.RandomState(seed).randint(0, 256, (h, w, 3)).astype(np.uint8)


def _seed(k):
    random.seed(k)
    np.random.seed(k)


def functions(mx):
    out = {}
    buf = png(picture())
    img = mx.image.imdecode(buf)
    out["decode"] = img.asnumpy()
    out["decode_gray"] = mx.image.imdecode(buf, flag=0).asnumpy()
    out["decode_bgr"] = mx.image.imdecode(buf, to_rgb=False).asnumpy()
    for interp in range(5):
        out["resize_%d" % interp] = mx.image.imresize(img, 23, 17, interp=interp).asnumpy()
    out["resize_short"] = mx.image.resize_short(img, 25).asnumpy()
    out["resize_short_auto"] = mx.image.resize_short(img, 50, interp=9).asnumpy()
    out["scale_down"] = np.array(mx.image.scale_down((40, 30), (50, 45)))
    out["border"] = mx.image.copyMakeBorder(img, 1, 2, 3, 4, type=0, value=9).asnumpy()
    out["fixed_crop"] = mx.image.fixed_crop(img, 3, 4, 20, 10, size=(15, 12)).asnumpy()
    crop, rect = mx.image.center_crop(img, (20, 18))
    out["center_crop"], out["center_rect"] = crop.asnumpy(), np.array(rect)
    for k in range(3):
        _seed(k)
        crop, rect = mx.image.random_crop(img, (16, 16))
        out["random_crop_%d" % k], out["random_rect_%d" % k] = crop.asnumpy(), np.array(rect)
        crop, rect = mx.image.random_size_crop(img, (16, 16), 0.2, (0.75, 1.33))
        out["size_crop_%d" % k], out["size_rect_%d" % k] = crop.asnumpy(), np.array(rect)
    norm = mx.image.color_normalize(img.astype("float32"), mx.nd.array([10, 20, 30]),
                                    mx.nd.array([2, 4, 8]))
    out["normalize"] = norm.asnumpy()
    chw = img.astype("float32").transpose((2, 0, 1))
    for k, (zin, zout) in enumerate([(False, False), (True, False), (False, True)]):
        out["rotate_%d" % k] = mx.image.imrotate(chw, 33.0, zoom_in=zin, zoom_out=zout).asnumpy()
    batch = mx.nd.stack(chw, chw * 0.5, axis=0)
    out["rotate_batch"] = mx.image.imrotate(batch, mx.nd.array([-20.0, 75.0])).asnumpy()
    _seed(7)
    out["random_rotate"] = mx.image.random_rotate(chw, (-40, 40)).asnumpy()
    out["random_rotate_batch"] = mx.image.random_rotate(batch, (-40, 40), zoom_in=True).asnumpy()
    return out


def augmenters(mx):
    out = {}
    img = mx.image.imdecode(png(picture(1))).astype("float32")
    eigval = np.array([55.46, 4.794, 1.148])
    eigvec = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                       [-0.5836, -0.6948, 0.4203]])
    augs = {
        "brightness": mx.image.BrightnessJitterAug(0.3),
        "contrast": mx.image.ContrastJitterAug(0.3),
        "saturation": mx.image.SaturationJitterAug(0.3),
        "hue": mx.image.HueJitterAug(0.3),
        "color": mx.image.ColorJitterAug(0.2, 0.3, 0.4),
        "lighting": mx.image.LightingAug(0.1, eigval, eigvec),
        "normalize": mx.image.ColorNormalizeAug([1.0, 2.0, 3.0], [2.0, 2.0, 2.0]),
        "gray": mx.image.RandomGrayAug(0.5),
        "flip": mx.image.HorizontalFlipAug(0.5),
        "cast": mx.image.CastAug("float64"),
        "sized_crop": mx.image.RandomSizedCropAug((12, 12), 0.3, (0.8, 1.2)),
        "force_resize": mx.image.ForceResizeAug((13, 11)),
        "resize": mx.image.ResizeAug(20, interp=1),
        "center": mx.image.CenterCropAug((10, 14)),
        "random_crop": mx.image.RandomCropAug((10, 14)),
    }
    for name, aug in augs.items():
        out["dumps_" + name] = np.array(json.dumps(aug.dumps()))  # a str, or a list
        for k in range(3):
            _seed(10 + k)
            out["%s_%d" % (name, k)] = aug(img.copy()).asnumpy()
    return out


def create_augmenter(mx):
    out = {}
    img = mx.image.imdecode(png(picture(2)))
    for name, kw in {
        "plain": dict(data_shape=(3, 16, 16)),
        "everything": dict(data_shape=(3, 16, 16), resize=20, rand_crop=True, rand_resize=True,
                           rand_mirror=True, mean=True, std=True, brightness=0.1,
                           contrast=0.1, saturation=0.1, hue=0.1, pca_noise=0.1,
                           rand_gray=0.3, inter_method=1),
        "mean_array": dict(data_shape=(3, 20, 20), rand_crop=True,
                           mean=np.array([100.0, 110.0, 120.0]), std=np.array([50.0, 60, 70])),
    }.items():
        augs = mx.image.CreateAugmenter(**kw)
        out["list_" + name] = np.array(json.dumps([a.dumps() for a in augs]))
        for k in range(3):
            _seed(20 + k)
            x = img
            for aug in augs:
                x = aug(x)
            out["%s_%d" % (name, k)] = x.asnumpy()
    return out


PICTURES = os.path.join(HERE, "pictures")  # PNG files for the image-list iterators


def write_pictures():
    """PNG files pic0..pic3.png under pictures/ and an image list naming them, in an order
    that is not their index order, with two labels each (run by gen_image_golden.py)."""
    os.makedirs(PICTURES, exist_ok=True)
    for k, (h, w) in enumerate([(20, 24), (18, 30), (26, 20), (22, 22)]):
        with open(os.path.join(PICTURES, "pic%d.png" % k), "wb") as f:
            f.write(png(picture(40 + k, h, w)))
    with open(os.path.join(PICTURES, "pictures.lst"), "w") as f:
        for k in (2, 0, 3, 1):
            f.write("%d\t%d\t%.1f\tpic%d.png\n" % (k, k, 0.5 * k, k))


def image_iter(mx):
    out = {}
    rec, idx = os.path.join(FILES, "images.rec"), os.path.join(FILES, "images.idx")
    configs = {
        "sequential": dict(batch_size=3, data_shape=(3, 16, 16), path_imgrec=rec),
        "indexed_shuffle": dict(batch_size=3, data_shape=(3, 16, 16), path_imgrec=rec,
                                path_imgidx=idx, shuffle=True, rand_crop=True,
                                rand_mirror=True),
        "discard": dict(batch_size=3, data_shape=(3, 16, 16), path_imgrec=rec,
                        last_batch_handle="discard"),
        "roll_over": dict(batch_size=3, data_shape=(3, 16, 16), path_imgrec=rec,
                          path_imgidx=idx, last_batch_handle="roll_over"),
        "parts": dict(batch_size=2, data_shape=(3, 16, 16), path_imgrec=rec, path_imgidx=idx,
                      num_parts=2, part_index=1),
        "augmented": dict(batch_size=4, data_shape=(3, 12, 12), path_imgrec=rec, resize=14,
                          mean=True, std=True, label_width=1),
        "list_file": dict(batch_size=3, data_shape=(3, 16, 16), label_width=2,
                          path_imglist=os.path.join(PICTURES, "pictures.lst"),
                          path_root=PICTURES, shuffle=True, rand_mirror=True),
        "list_in_memory": dict(batch_size=3, data_shape=(3, 16, 16), path_root=PICTURES,
                               imglist=[[1.0, "pic0.png"], [2.0, "pic1.png"],
                                        [[3.0], "pic2.png"], [4.0, "pic3.png"]],
                               last_batch_handle="discard"),
        "list_in_memory_multi": dict(batch_size=2, data_shape=(3, 16, 16), label_width=2,
                                     path_root=PICTURES, dtype="int32",
                                     imglist=[[1, 10, "pic0.png"], [2, 20, "pic1.png"],
                                              [3, 30, "pic2.png"]]),
    }
    for name, kw in configs.items():
        _seed(30)
        it = mx.image.ImageIter(**kw)
        for epoch in range(3):
            for k, batch in enumerate(it):
                key = "%s_e%d_b%d" % (name, epoch, k)
                out[key + "_data"] = batch.data[0].asnumpy()
                out[key + "_label"] = batch.label[0].asnumpy()
                out[key + "_pad"] = np.array(batch.pad)
            it.reset()
    return out


CASES = {"functions": functions, "augmenters": augmenters,
         "create_augmenter": create_augmenter, "image_iter": image_iter}
