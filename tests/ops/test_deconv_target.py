"""Deconvolution with target_shape decides its own adj and pad: the adj given beside it is
ignored (as in MXNet 1.9.1), while without a target an adj of stride or more is an error."""
import pytest

import minimod as mx
from minimod.base import OpParamError


def test_target_shape_overrides_any_adj():
    d = mx.sym.var("d")
    net = mx.sym.Deconvolution(d, kernel=(3, 3), stride=(2, 2), adj=(101, 101), num_filter=5,
                               target_shape=(8, 8))
    assert net.infer_shape(d=(1, 3, 4, 4))[1] == [(1, 5, 8, 8)]


def test_adj_without_target_must_be_below_stride():
    d = mx.sym.var("d")
    assert mx.sym.Deconvolution(d, kernel=(3, 3), stride=(2, 2), adj=(1, 1),
                                num_filter=5).infer_shape(d=(1, 3, 4, 4))[1] == [(1, 5, 10, 10)]
    with pytest.raises(OpParamError, match="smaller than stride"):
        mx.sym.Deconvolution(d, kernel=(3, 3), stride=(2, 2), adj=(3, 3), num_filter=5)
