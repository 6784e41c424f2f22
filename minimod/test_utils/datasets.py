"""MXNet's test data sets, read from local files.

MXNet's helpers download MNIST and CIFAR-10; minimod never reaches the network on its own.
Each loader looks for the files where MXNet's would have put them (under `data/` in the
current directory, or `$MXNET_HOME/datasets/...`) and raises FileNotFoundError naming every
missing file and where to get it when they are not there.
"""
from __future__ import annotations

import bz2
import gzip
import os
import struct
import zipfile

import numpy as np

from ..base import data_dir

__all__ = ["download", "get_mnist", "get_mnist_ubyte", "get_mnist_pkl", "get_cifar10",
           "get_bz2_data", "get_zip_data", "get_im2rec_path", "DATA_URLS"]

#: where MXNet's helpers fetched each data set from
DATA_URLS = {
    "mnist": "http://data.mxnet.io/data/mnist/",
    "mnist.zip": "http://data.mxnet.io/mxnet/data/mnist.zip",
    "cifar10.zip": "http://data.mxnet.io/mxnet/data/cifar10.zip",
    "mnist.pkl.gz": "http://deeplearning.net/data/mnist/mnist.pkl.gz",
}

_MNIST_UBYTE = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                "t10k-labels-idx1-ubyte")


def _missing(what: str, files, source: str):
    raise FileNotFoundError(
        "%s: minimod does not download data; missing %s. Fetch %s and put the files there."
        % (what, ", ".join(os.path.abspath(f) for f in files), source))


def download(url: str, fname=None, dirname=None, overwrite: bool = False, retries: int = 5):
    """The local path MXNet's `download(url)` would have written (dirname/fname, fname
    defaulting to the URL's last part); FileNotFoundError when the file is not there."""
    fname = fname or url.split("/")[-1]
    if dirname:
        fname = os.path.join(dirname, fname)
    if os.path.exists(fname) and not overwrite:
        return fname
    _missing("download(%r)" % url, [fname], url)


def _mnist_dir() -> str:
    return os.path.join(os.path.expanduser(data_dir()), "datasets", "mnist")


def _read_idx(path: str) -> np.ndarray:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        magic = struct.unpack(">I", f.read(4))[0]
        dims = [struct.unpack(">I", f.read(4))[0] for _ in range(magic & 0xFF)]
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(dims)


def get_mnist() -> dict:
    """MNIST as MXNet's `get_mnist()` returns it: train/test images (N, 1, 28, 28) float32 in
    [0, 1] and int8 labels, read from the four gzipped IDX files in the working directory or
    $MXNET_HOME/datasets/mnist."""
    names = {k: n + ".gz" for k, n in zip(("train_data", "train_label", "test_data",
                                          "test_label"), _MNIST_UBYTE)}
    found = {}
    for key, name in names.items():
        paths = [name, os.path.join(_mnist_dir(), name)]
        found[key] = next((p for p in paths if os.path.exists(p)), None)
    missing = [names[k] for k, p in found.items() if p is None]
    if missing:
        _missing("get_mnist", missing, DATA_URLS["mnist"])
    out = {}
    for key, path in found.items():
        values = _read_idx(path)
        out[key] = (values.reshape(len(values), 1, 28, 28).astype(np.float32) / 255
                    if key.endswith("data") else values.astype(np.int8))
    return out


def get_im2rec_path() -> str:
    """The path of the im2rec script (minimod.tools.im2rec), which runs as
    `python <path> prefix root ...` as MXNet's tools/im2rec.py does."""
    from ..tools import im2rec
    return os.path.abspath(im2rec.__file__)


def get_mnist_ubyte() -> None:
    """Check that MNIST's four IDX files are in ./data (MXNet's helper downloads them)."""
    paths = [os.path.join("data", n) for n in _MNIST_UBYTE]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        _missing("get_mnist_ubyte", missing, DATA_URLS["mnist.zip"])


def get_mnist_pkl() -> None:
    """Check that data/mnist.pkl.gz is there (MXNet's helper downloads it)."""
    path = os.path.join("data", "mnist.pkl.gz")
    if not os.path.exists(path):
        _missing("get_mnist_pkl", [path], DATA_URLS["mnist.pkl.gz"])


def get_cifar10() -> None:
    """Check that CIFAR-10's RecordIO files are in ./data/cifar (MXNet's helper downloads
    them)."""
    names = ("train.rec", "test.rec", "train.lst", "test.lst")
    paths = [os.path.join("data", "cifar", n) for n in names]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        _missing("get_cifar10", missing, DATA_URLS["cifar10.zip"])


def get_bz2_data(data_dir: str, data_name: str, url: str, data_origin_name: str) -> None:
    """Make data_dir/data_name from the bz2 file data_dir/data_origin_name (which must be
    there: minimod does not download it)."""
    target = os.path.join(data_dir, data_name)
    if os.path.exists(target):
        return
    source = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(source):
        _missing("get_bz2_data", [source], url)
    tmp = target + ".part"
    with bz2.open(source, "rb") as src, open(tmp, "wb") as dst:
        for block in iter(lambda: src.read(1 << 20), b""):
            dst.write(block)
    os.replace(tmp, target)


def get_zip_data(data_dir: str, url: str, data_origin_name: str) -> None:
    """Extract data_dir/data_origin_name (which must be there) into data_dir."""
    source = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(source):
        _missing("get_zip_data", [source], url)
    with zipfile.ZipFile(source) as archive:
        archive.extractall(data_dir)

