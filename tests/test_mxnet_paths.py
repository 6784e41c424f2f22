"""MXNet's module paths and names that user code imports things from lead to minimod's own
objects (`mxnet.io.io`, `mxnet.io.utils`, `mx.mod.executor_group`, the names MXNet's
`mx.model`, `mx.callback`, `mx.rnn` and `mx.test_utils` re-export)."""
import os

import numpy as np
import pytest

import minimod as mx


def test_io_io_is_the_iterators_module_path():
    from minimod.io.io import DataBatch, DataDesc, DataIter, MXDataIter, NDArrayIter
    assert (DataBatch, DataDesc, DataIter, MXDataIter, NDArrayIter) == (
        mx.io.DataBatch, mx.io.DataDesc, mx.io.DataIter, mx.io.MXDataIter, mx.io.NDArrayIter)


def test_io_utils_helpers():
    from minimod.io.utils import _getdata_by_idx, _has_instance, _init_data
    data = _init_data({"b": np.arange(6).reshape(3, 2), "a": mx.nd.ones((3,))}, False, "data")
    assert [name for name, _ in data] == ["a", "b"]
    assert _has_instance(data, mx.nd.NDArray) and not _has_instance(data, str)
    assert [n for n, _ in _init_data([np.zeros(2), np.ones(2)], False, "data")] == \
        ["_0_data", "_1_data"]
    shuffled = _getdata_by_idx(data, [2, 0, 1])
    assert shuffled[1][1].asnumpy().tolist() == [[4, 5], [0, 1], [2, 3]]
    assert shuffled[1][1] is not data[1][1]
    with pytest.raises(mx.MXNetError):
        _init_data(None, False, "data")


def test_reexported_names():
    assert mx.mod.executor_group.DataParallelExecutorGroup is \
        mx.module.executor_group.DataParallelExecutorGroup
    assert mx.callback.save_checkpoint is mx.model.save_checkpoint
    assert mx.rnn.save_checkpoint is mx.model.save_checkpoint
    assert mx.rnn.load_checkpoint is mx.model.load_checkpoint
    assert mx.model.get_updater is mx.optimizer.get_updater
    assert mx.model.LogValidationMetricsCallback is mx.callback.LogValidationMetricsCallback
    assert mx.model.DataDesc is mx.io.DataDesc


def test_test_utils_environment_and_device_helpers(monkeypatch):
    monkeypatch.delenv("MINIMOD_PATH_TEST", raising=False)
    assert mx.test_utils.getenv("MINIMOD_PATH_TEST") is None
    mx.test_utils.setenv("MINIMOD_PATH_TEST", "7")
    assert mx.test_utils.getenv("MINIMOD_PATH_TEST") == "7" == os.environ["MINIMOD_PATH_TEST"]
    mx.test_utils.setenv("MINIMOD_PATH_TEST", None)
    assert "MINIMOD_PATH_TEST" not in os.environ
    with pytest.raises(ValueError, match="Expecting a gpu context"):
        mx.test_utils.get_cuda_compute_capability(mx.cpu())
    if mx.context.num_gpus() == 0:
        with pytest.raises(mx.MXNetError, match="gpu"):
            mx.util.get_cuda_compute_capability(mx.gpu(0))
    else:
        assert isinstance(mx.util.get_cuda_compute_capability(mx.gpu(0)), int)
        assert mx.util.get_cuda_compute_capability(mx.gpu(0)) >= 30
