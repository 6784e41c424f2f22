"""ImageRecordInt8Iter, ImageRecordIter_v1 and ImageRecordUInt8Iter_v1 give MXNet 1.9.1's
first batch (tests/data/io/image_record_variants.npz, written by
gen_image_record_variants.py), and every C++-backed iterator is an mx.io.MXDataIter."""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.io import DataIterError

pytest.importorskip("cv2", reason="the image extra (OpenCV) is not installed")

HERE = os.path.join(os.path.dirname(__file__), "data", "io")
REC = os.path.join(HERE, "files", "images.rec")
GOLDEN = np.load(os.path.join(HERE, "image_record_variants.npz"))
CASES = sorted({k.split("/")[0] for k in GOLDEN.files})
TOLERANCE = {"uint8_v1": 1}  # OpenCV versions round bicubic resizes a level apart


@pytest.mark.parametrize("name", CASES)
def test_first_batch_is_mxnets(name):
    cls, kwargs = json.loads(str(GOLDEN[name + "/kwargs"]))
    it = getattr(mx.io, cls)(path_imgrec=REC, **kwargs)
    batch = next(iter(it))
    want = GOLDEN[name + "/data"]
    assert batch.data[0].dtype == want.dtype
    np.testing.assert_allclose(batch.data[0].asnumpy().astype(float), want.astype(float),
                               atol=TOLERANCE.get(name, 0))
    np.testing.assert_array_equal(batch.label[0].asnumpy(), GOLDEN[name + "/label"])


def test_int8_saturates_and_v1_has_no_dtype():
    it = mx.io.ImageRecordInt8Iter(path_imgrec=REC, data_shape=(3, 20, 20), batch_size=7,
                                   mean_r=-200)
    red = next(iter(it)).data[0].asnumpy()[:, 0]
    assert red.max() == 127 and red.min() >= 127 - 1  # every red pixel + 200 is above 127
    with pytest.raises(DataIterError, match="ImageRecordIter_v1 has no parameter 'dtype'"):
        mx.io.ImageRecordIter_v1(path_imgrec=REC, data_shape=(3, 20, 20), batch_size=2,
                                 dtype="float16")


def test_the_cpp_iterators_are_mxdataiters(tmp_path):
    csv = tmp_path / "data.csv"
    csv.write_text("1,2\n3,4\n")
    iters = [mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 20, 20), batch_size=2),
             mx.io.CSVIter(data_csv=str(csv), data_shape=(2,), batch_size=1)]
    assert all(isinstance(it, mx.io.MXDataIter) for it in iters)
    assert not isinstance(mx.io.NDArrayIter(np.zeros((2, 2)), batch_size=1), mx.io.MXDataIter)
    with pytest.raises(TypeError, match="not created directly"):
        mx.io.MXDataIter()
