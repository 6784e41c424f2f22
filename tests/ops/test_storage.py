"""cast_storage: dense to dense is a copy with a pass-through gradient. On NDArrays every
storage type converts (mx.nd.sparse); in a graph, whose arrays the executor keeps dense, the
sparse storage types are refused when the node is made."""
import numpy as np
import pytest

import minimod as mx
from minimod.base import OpParamError

from .harness import Case, check_case


def test_cast_to_default_is_a_copy_with_its_gradient():
    x = np.random.RandomState(0).randn(2, 3)
    check_case(Case("cast_storage", {"stype": "default"}, [x], lambda a: [a.copy()]))
    out = mx.nd.cast_storage(mx.nd.array(x), stype="default")
    np.testing.assert_allclose(out.asnumpy(), x.astype(np.float32))


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_sparse_storage_types_convert_arrays_and_are_refused_in_graphs(stype):
    with pytest.raises(OpParamError, match="dense"):
        mx.sym.cast_storage(mx.sym.var("x"), stype=stype)
    x = np.array([[0, 1], [0, 0]], dtype=np.float32)
    out = mx.nd.cast_storage(mx.nd.array(x), stype=stype)
    assert out.stype == stype
    np.testing.assert_array_equal(out.asnumpy(), x)
