"""mx.io.ImageRecordIter: MXNet 1.9.1's batches for every configuration without random draws
(tests/data/io/image_record_golden.npz, written by gen_image_record_golden.py from the records
in tests/data/io/files), the random augmentations' contracts, and the refusals."""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.io import DataIterError
from minimod.io.image_files import record_offsets

pytest.importorskip("cv2", reason="the image extra (OpenCV) is not installed")

HERE = os.path.join(os.path.dirname(__file__), "data", "io")
FILES = os.path.join(HERE, "files")
GOLDEN = np.load(os.path.join(HERE, "image_record_golden.npz"))
CONFIGS = sorted({k.split("/")[0] for k in GOLDEN.files})
# OpenCV's bicubic rounds a few pixels one level differently across its versions (two
# bicubic resizes in a row: two levels) and its warpAffine's bilinear weights a few levels
# apart (Lanczos warps agree exactly)
TOLERANCE = {"cubic": 1.0, "crop_size_cubic": 2.0, "auto_enlarge": 1.0, "auto_mixed": 1.0,
             "auto_aspect": 1.0, "rotate_bilinear": 4.0}


def _iter(kwargs, folder=FILES, **more):
    kwargs = dict(kwargs, **more)
    kwargs["path_imgrec"] = os.path.join(FILES, kwargs.get("path_imgrec", "images.rec"))
    if "mean_img" in kwargs:
        kwargs["mean_img"] = os.path.join(folder, kwargs["mean_img"])
    if "path_imglist" in kwargs:
        kwargs["path_imglist"] = os.path.join(FILES, kwargs["path_imglist"])
    return mx.io.ImageRecordIter(**kwargs)


def _batches(name, epoch):
    keys = sorted({k.split("/")[1].split("_")[0] for k in GOLDEN.files
                   if k.startswith("%s/e%d" % (name, epoch))})
    return [tuple(GOLDEN["%s/%s_%s" % (name, k, part)] for part in ("data", "label", "pad"))
            for k in keys]


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("name", CONFIGS)
def test_batches_are_mxnets(name, threads, tmp_path):
    kwargs = json.loads(str(GOLDEN[name + "/kwargs"]))
    written = name + "/written_mean" in GOLDEN.files  # a mean image computed and written
    it = _iter(kwargs, tmp_path if written else FILES, preprocess_threads=threads,
               prefetch_buffer=2)
    if written:
        saved = mx.nd.load(str(tmp_path / kwargs["mean_img"]))
        assert list(saved) == ["mean_img"]
        np.testing.assert_allclose(saved["mean_img"].asnumpy(), GOLDEN[name + "/written_mean"],
                                   rtol=1e-5, atol=1e-4)
    provide = [[d.name, list(d.shape)] for d in it.provide_data + it.provide_label]
    assert provide == json.loads(str(GOLDEN[name + "/provide"]))
    for epoch in range(2):  # the second epoch starts after the rows the first one borrowed
        want = _batches(name, epoch)
        got = list(it)
        assert len(got) == len(want)
        for batch, (data, label, pad) in zip(got, want):
            real = len(data) if kwargs.get("round_batch", True) else len(data) - batch.pad
            assert batch.data[0].dtype == np.dtype(kwargs.get("dtype", "float32"))
            np.testing.assert_allclose(batch.data[0].asnumpy()[:real].astype(np.float32),
                                       data[:real].astype(np.float32), rtol=1e-6,
                                       atol=TOLERANCE.get(name, 1e-5))
            np.testing.assert_array_equal(batch.label[0].asnumpy()[:real], label[:real])
            if kwargs.get("round_batch", True):
                assert batch.pad == int(pad)
        it.reset()


def test_last_batch_without_round_batch_is_padded_with_zeros():
    """MXNet reports pad 0 and leaves uninitialised memory in the missing rows."""
    it = _iter(dict(data_shape=(3, 20, 20), batch_size=3, round_batch=False))
    last = list(it)[-1]
    assert last.pad == 2
    assert not last.data[0].asnumpy()[1:].any() and not last.label[0].asnumpy()[1:].any()


def test_random_crop_and_mirror_take_windows_of_the_image():
    seen_mirror, seen_offsets = 0, set()
    it = _iter(dict(data_shape=(3, 16, 16), batch_size=7, rand_crop=True, rand_mirror=True,
                    seed=5))
    center = _iter(dict(data_shape=(3, 28, 28), batch_size=7))
    ref = next(iter(center)).data[0].asnumpy()[2]  # image 2 is 28 x 28: no scaling
    for _ in range(12):
        crop = next(iter(it)).data[0].asnumpy()[2]
        it.reset()
        hits = [(y, x, m) for y in range(13) for x in range(13) for m in (0, 1)
                if np.array_equal(crop, (ref[:, y:y + 16, x:x + 16][:, :, ::-1] if m
                                         else ref[:, y:y + 16, x:x + 16]))]
        assert hits, "a random crop is a (mirrored) 16 x 16 window of the image"
        seen_mirror += hits[0][2]
        seen_offsets.add(hits[0][:2])
    assert 0 < seen_mirror < 12 and len(seen_offsets) > 3


def test_shuffle_visits_every_record_in_a_new_order_each_epoch():
    it = _iter(dict(data_shape=(3, 20, 20), batch_size=7, shuffle=True, seed=3))
    orders = []
    for _ in range(3):
        orders.append(next(iter(it)).label[0].asnumpy().tolist())
        it.reset()
    assert all(sorted(o) == list(range(7)) for o in orders)
    assert len({tuple(o) for o in orders}) > 1
    again = _iter(dict(data_shape=(3, 20, 20), batch_size=7, shuffle=True, seed=3))
    assert next(iter(again)).label[0].asnumpy().tolist() == orders[0]


def test_module_trains_on_image_records():
    it = _iter(dict(data_shape=(3, 20, 20), batch_size=7, scale=1 / 255.0))
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Flatten(mx.sym.Pooling(
        mx.sym.Variable("data"), kernel=(4, 4), stride=(4, 4), pool_type="avg")),
        num_hidden=7), name="softmax")
    mod = mx.mod.Module(net)
    mod.fit(it, num_epoch=60, optimizer_params={"learning_rate": 0.5},
            initializer=mx.init.Xavier())
    acc = mod.score(it, mx.metric.Accuracy())[0][1]
    assert acc > 0.8  # seven images, seven labels: it memorises them


@pytest.mark.parametrize("kwargs, text", [
    (dict(max_rotate_angle=10, inter_method=0), "inter_method=0 cannot warp"),
    (dict(max_crop_size=12), r"min_crop_size=-1 and max_crop_size=12 must both be given"),
    (dict(aug_seq="aug_torch"), "aug_seq='aug_torch' is not supported"),
    (dict(min_crop_size=25, max_crop_size=25), r"smaller than max_crop_size=25"),
    (dict(brightness=-0.2), r"brightness=-0.2 must be >= 0"),
    (dict(max_rotate_angle=-5), "must be >= 0"),
    (dict(min_random_scale=0.0), "random scales > 0"),
    (dict(random_h=5, data_shape=(1, 20, 20)), "random_h need.s. 3-channel images"),
    (dict(path_imglist="missing.lst"), "cannot read path_imglist"),
    (dict(not_a_parameter=1), "no parameter 'not_a_parameter'"),
    (dict(data_shape=(2, 20, 20)), "data_shape must be"),
    (dict(mean_img="mean_20.bin", data_shape=(3, 16, 16)), r"has shape \(3, 20, 20\)"),
    (dict(label_width=2), "has 1 label"),
])
def test_refusals_name_the_parameter(kwargs, text):
    args = dict(dict(data_shape=(3, 20, 20), batch_size=2), **kwargs)
    with pytest.raises(DataIterError, match=text):
        list(_iter(args))


def test_random_warps_vary_and_keep_the_shape():
    """max_rotate_angle, shear, scale and aspect draw per image; their geometry is checked
    against MXNet by the fixed-draw configurations of the golden file."""
    it = _iter(dict(data_shape=(3, 20, 20), batch_size=7, max_rotate_angle=30,
                    max_shear_ratio=0.2, min_random_scale=0.8, max_random_scale=1.2,
                    max_aspect_ratio=0.3, seed=4))
    first = next(iter(it)).data[0].asnumpy()
    it.reset()
    second = next(iter(it)).data[0].asnumpy()
    assert first.shape == (7, 3, 20, 20) and not np.array_equal(first, second)
    plain = next(iter(_iter(dict(data_shape=(3, 20, 20), batch_size=7)))).data[0].asnumpy()
    assert not np.array_equal(first, plain)


def test_uint8_iterator_gives_raw_pixels_and_ignores_normalisation():
    """As MXNet's ImageRecordUInt8Iter: mean, scale and dtype are taken and ignored."""
    raw = mx.io.ImageRecordUInt8Iter(path_imgrec=os.path.join(FILES, "images.rec"),
                                     data_shape=(3, 20, 20), batch_size=7, mean_r=10,
                                     scale=0.5, dtype="float32")
    data = next(iter(raw)).data[0]
    assert data.dtype == np.uint8 and raw.provide_data[0].dtype == np.uint8
    np.testing.assert_array_equal(data.asnumpy(), _batches("uint8", 0)[0][0])


def test_not_a_recordio_file():
    with pytest.raises(mx.MXNetError, match="not a RecordIO file"):
        mx.io.ImageRecordIter(path_imgrec=os.path.join(FILES, "data.csv"),
                              data_shape=(3, 8, 8), batch_size=1)


SECOND = record_offsets(os.path.join(FILES, "images.rec"))[0][1]  # where record 1 starts


@pytest.mark.parametrize("damage, text", [
    (lambda raw: raw[:-100], "is truncated"),
    (lambda raw: raw + b"\x00\x01", "stray bytes"),
    (lambda raw: raw[:SECOND] + b"\xff" * 4 + raw[SECOND + 4:],
     "not a RecordIO file: no record at byte %d" % SECOND),
    (lambda raw: raw[:60] + b"\x00" * 64 + raw[124:], "record at byte 0 .* not an image"),
])
def test_damaged_files_are_named(tmp_path, damage, text):
    with open(os.path.join(FILES, "images.rec"), "rb") as f:
        raw = f.read()
    path = tmp_path / "damaged.rec"
    path.write_bytes(damage(raw))
    with pytest.raises(mx.MXNetError, match=text):
        list(mx.io.ImageRecordIter(path_imgrec=str(path), data_shape=(3, 20, 20),
                                   batch_size=7))


def test_a_record_that_is_not_an_image(tmp_path):
    path = tmp_path / "text.rec"
    writer = mx.recordio.MXRecordIO(str(path), "w")
    writer.write(mx.recordio.pack(mx.recordio.IRHeader(0, 1.0, 0, 0), b"no pixels here"))
    writer.close()
    with pytest.raises(mx.MXNetError, match="not an image OpenCV decodes"):
        list(mx.io.ImageRecordIter(path_imgrec=str(path), data_shape=(3, 8, 8), batch_size=1))
