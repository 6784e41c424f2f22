"""MXNet's module paths and names that user code imports things from lead to minimod's own
objects (`mxnet.io.io`, `mxnet.io.utils`, `mx.mod.executor_group`, `mxnet.name`,
`mxnet.ndarray.op`, `mxnet.optimizer.contrib` ..., the names MXNet's `mx.model`,
`mx.callback`, `mx.rnn` and `mx.test_utils` re-export): real modules, giving the same objects
as the short names."""
import importlib
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


SAME = [  # (module path, name, the object it must be)
    ("minimod.name", "Prefix", lambda: mx.sym.Prefix),
    ("minimod.name", "NameManager", lambda: mx.sym.NameManager),
    ("minimod.attribute", "AttrScope", lambda: mx.AttrScope),
    ("minimod.ndarray.utils", "zeros", lambda: mx.nd.zeros),
    ("minimod.ndarray.utils", "array", lambda: mx.nd.array),
    ("minimod.ndarray.utils", "load_frombuffer", lambda: mx.nd.load_frombuffer),
    ("minimod.kvstore.kvstore", "KVStore", lambda: mx.kv.KVStore),
    ("minimod.image.image", "CreateAugmenter", lambda: mx.image.CreateAugmenter),
    ("minimod.image.image", "imdecode", lambda: mx.image.imdecode),
    ("minimod.io.io", "LibSVMIter", lambda: mx.io.LibSVMIter),
    ("minimod.optimizer.contrib", "GroupAdaGrad", lambda: mx.optimizer.GroupAdaGrad),
    ("minimod.ndarray.op", "sum", lambda: mx.nd.sum),
    ("minimod.symbol.op", "FullyConnected", lambda: mx.sym.FullyConnected),
    ("minimod.ndarray.ndarray", "add", lambda: mx.nd.add),
    ("minimod.ndarray.ndarray", "lesser_equal", lambda: mx.nd.lesser_equal),
    ("minimod.ndarray.ndarray", "moveaxis", lambda: mx.nd.moveaxis),
    ("minimod.ndarray.ndarray", "histogram", lambda: mx.nd.histogram),
    ("minimod.ndarray.ndarray", "onehot_encode", lambda: mx.nd.onehot_encode),
    ("minimod.ndarray.ndarray", "from_dlpack", lambda: mx.nd.from_dlpack),
]


def test_ndarray_module_has_mxnets_code_tables():
    import minimod.ndarray.ndarray as nd_module
    assert nd_module._DTYPE_NP_TO_MX[np.float16] == 2 and nd_module._DTYPE_NP_TO_MX[None] == -1
    assert nd_module._DTYPE_MX_TO_NP[6] is np.int64
    assert all(nd_module._DTYPE_MX_TO_NP[code] is t
               for t, code in nd_module._DTYPE_NP_TO_MX.items())
    assert mx.nd._GRAD_REQ_MAP == {"null": 0, "write": 1, "add": 3}
    # the codes are those the serialisers write (minimod.graph.DTYPE_NP_TO_MX)
    from minimod.graph import DTYPE_NP_TO_MX
    assert {np.dtype(t): code for t, code in nd_module._DTYPE_NP_TO_MX.items()
            if t is not None} == DTYPE_NP_TO_MX


@pytest.mark.parametrize("path, name, expected", SAME, ids=[f"{p}.{n}" for p, n, _ in SAME])
def test_module_path_gives_the_same_object(path, name, expected):
    module = importlib.import_module(path)
    assert getattr(module, name) is expected()
    assert name in getattr(module, "__all__", dir(module))


def test_name_module_scopes_new_symbols():
    from minimod.name import Prefix
    with Prefix("stage1_"):
        fc = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=2)
    assert fc.name == "stage1_fullyconnected0"


def test_op_modules_run_and_build_every_public_operator():
    from minimod.ndarray import op as nd_op
    from minimod.symbol import op as sym_op
    x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(nd_op.broadcast_add(x, x).asnumpy(), 2 * x.asnumpy())
    fc = sym_op.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
    assert fc.list_arguments() == ["data", "fc_weight", "fc_bias"]
    assert {"Convolution", "softmax", "broadcast_add"} <= set(dir(nd_op)) & set(dir(sym_op))
    with pytest.raises(AttributeError, match="no_such_op"):
        nd_op.no_such_op
    with pytest.raises(AttributeError, match="no_such_op"):
        sym_op.no_such_op


def test_ndarray_utils_make_sparse_arrays():
    from minimod.ndarray import utils
    assert utils.zeros((2, 3), stype="csr").stype == "csr"
    assert utils.empty((2, 3), stype="row_sparse").stype == "row_sparse"


def test_scopes_current_is_mxnets_thread_local_class_property():
    import threading

    from minimod.attribute import AttrScope
    from minimod.name import NameManager, Prefix
    old_scope, old_names = AttrScope.current, NameManager.current
    try:
        AttrScope.current = AttrScope(__group__="4")
        assert mx.sym.var("x").list_attr() == {"__group__": "4"}
        with AttrScope(__stage__="2"):
            assert AttrScope.current._attr == {"__group__": "4", "__stage__": "2"}
        NameManager.current = Prefix("p_")
        assert mx.sym.FullyConnected(mx.sym.var("y"), num_hidden=2).name == "p_fullyconnected0"
        seen = []
        thread = threading.Thread(target=lambda: seen.append(
            (AttrScope.current._attr, type(NameManager.current))))
        thread.start()
        thread.join()
        assert seen == [({}, NameManager)]  # another thread has its own
        with pytest.raises(TypeError, match="must be a AttrScope"):
            AttrScope.current = "x"
    finally:
        AttrScope.current, NameManager.current = old_scope, old_names


def test_base_data_dir_is_mxnet_home_or_the_default(monkeypatch):
    monkeypatch.delenv("MXNET_HOME", raising=False)
    assert mx.base.data_dir() == mx.base.data_dir_default()
    assert mx.base.data_dir_default().endswith(os.path.join("", ".mxnet"))
    monkeypatch.setenv("MXNET_HOME", "/somewhere")
    assert mx.base.data_dir() == "/somewhere"
