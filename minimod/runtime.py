"""`mx.runtime`: what this minimod installation can do, as MXNet's `Features()` reports it.

MXNet reports the options its library was compiled with; minimod reports what it finds at run
time: CUDA when CuPy sees a GPU, CUDNN when the cuDNN path of backend.py loads, NCCL when
CuPy's NCCL bindings load, CUDA_RTC when CuPy can compile kernels, DIST_KVSTORE when mpi4py
imports (the 'dist_sync' kvstore), BLAS_OPEN / BLAS_MKL from NumPy's BLAS, OPENCV when cv2
imports (RecordIO's image packing), LAPACK always (NumPy's linalg). Every other MXNet feature
name is listed as disabled: minimod does not have it.
"""
from __future__ import annotations

import collections
import importlib.util

import numpy as np

from . import backend

__all__ = ["Feature", "Features", "feature_list"]

#: MXNet 1.9.1's feature names, in its order
FEATURE_NAMES = (
    "CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3",
    "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C",
    "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN",
    "OPENCV", "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE",
    "SIGNAL_HANDLER", "DEBUG", "TVM_OP")


class Feature(collections.namedtuple("Feature", ["name", "enabled"])):
    """One capability and whether this installation has it."""

    def __repr__(self):
        return ("✔ " if self.enabled else "✖ ") + self.name


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _blas_vendor() -> str:
    try:
        config = np.show_config(mode="dicts")
        return str(config.get("Build Dependencies", {}).get("blas", {}).get("name", "")).lower()
    except TypeError:  # NumPy < 1.26 has no mode="dicts"
        return "openblas"


def _detect() -> dict:
    gpu = backend.gpu_count() > 0
    blas = _blas_vendor()
    found = {
        "CUDA": gpu,
        "CUDNN": gpu and backend.cudnn_status().startswith("cuDNN"),
        "NCCL": backend.nccl_module() is not None,
        "CUDA_RTC": gpu,
        "LAPACK": True,
        "BLAS_OPEN": "openblas" in blas,
        "BLAS_MKL": "mkl" in blas,
        "BLAS_APPLE": "accelerate" in blas,
        "DIST_KVSTORE": _importable("mpi4py"),
        "OPENCV": _importable("cv2"),
        "INT64_TENSOR_SIZE": True,  # NumPy and CuPy index with 64-bit sizes
    }
    return {name: bool(found.get(name, False)) for name in FEATURE_NAMES}


def feature_list() -> list:
    """Every feature as a Feature(name, enabled), in MXNet's order."""
    return [Feature(name, on) for name, on in _detect().items()]


class Features(collections.OrderedDict):
    """name -> Feature for this installation; `is_enabled(name)` asks about one."""

    instance = None

    def __new__(cls):
        if cls.instance is None:
            cls.instance = super().__new__(cls)
            super(Features, cls.instance).__init__(
                (f.name, f) for f in feature_list())
        return cls.instance

    def __init__(self):  # filled once, in __new__
        pass

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name: str) -> bool:
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError("Feature '%s' is unknown, known features are: %s"
                               % (feature_name, list(self.keys())))
        return self[name].enabled
