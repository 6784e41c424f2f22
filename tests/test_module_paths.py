"""MXNet's module paths that user code imports names from (`from mxnet.name import Prefix`,
`from mxnet.ndarray import op`, `import mxnet.optimizer.contrib` ...) exist in minimod as real
modules, and give the same objects as the short names."""
import importlib

import numpy as np
import pytest

import minimod as mx

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
]


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
