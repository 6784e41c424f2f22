"""cast_storage: dense to dense is a copy with a pass-through gradient; the sparse storage
types, which minimod does not have, are refused when the node is made."""
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
def test_sparse_storage_types_are_refused(stype):
    with pytest.raises(OpParamError, match="dense"):
        mx.sym.cast_storage(mx.sym.var("x"), stype=stype)
    with pytest.raises(OpParamError, match="dense"):
        mx.nd.cast_storage(mx.nd.ones((2, 2)), stype=stype)
