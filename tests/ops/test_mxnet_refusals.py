"""Input MXNet 1.9.1 refuses is refused here too (and what it accepts, accepted): diag's k
beyond the matrix, depth_to_space / space_to_depth on empty dims."""
import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError

from .harness import Case, check_case

# MXNet 1.9.1's diag on a 3x4 matrix: the length of the k-th diagonal, or an error
DIAG_3X4 = {-5: None, -4: None, -3: 0, -2: 1, -1: 2, 0: 3, 1: 3, 2: 2, 3: 1, 4: 0, 5: None}


@pytest.mark.parametrize("k, length", sorted(DIAG_3X4.items()))
def test_diag_k_range_is_mxnets(k, length):
    a = mx.nd.ones((3, 4))
    if length is None:
        with pytest.raises(MXNetError, match="names no diagonal"):
            mx.nd.diag(a, k=k)
    else:
        assert mx.nd.diag(a, k=k).shape == (length,)


@pytest.mark.parametrize("op, shape", [("depth_to_space", (1, 4, 0, 3)),
                                       ("space_to_depth", (1, 0, 4, 4))])
def test_block_moves_refuse_empty_dims(op, shape):
    with mx.np_shape(True), pytest.raises(MXNetError, match="without empty dims"):
        getattr(mx.nd, op)(mx.nd.ones(shape), 2)


@pytest.mark.parametrize("op", ["depth_to_space", "space_to_depth"])
def test_block_moves_refuse_a_zero_block(op):
    with pytest.raises(MXNetError, match="block_size must be >= 1"):
        getattr(mx.nd, op)(mx.nd.ones((1, 4, 2, 2)), 0)


def _prelu_ref(x, gamma):
    g = gamma.reshape(gamma.shape + (1,) * (x.ndim - gamma.ndim))
    return [np.where(x > 0, x, g * x)]


@pytest.mark.parametrize("x_shape, g_shape", [((3, 4), (3, 4)), ((3, 4, 2, 5), (3, 4)),
                                              ((3, 4, 2), (1, 4))])
def test_prelu_gamma_lined_up_with_leading_dims(x_shape, g_shape):
    """MXNet takes a gamma of 2+ dims that broadcasts over data's leading dims."""
    rng = np.random.RandomState(1)
    x = rng.uniform(-1, 1, x_shape)
    x[np.abs(x) < 1e-3] = 0.5
    check_case(Case("LeakyReLU", {"act_type": "prelu"}, [x, rng.uniform(0.1, 0.5, g_shape)],
                    _prelu_ref, infer_from=[0, 1]))


def test_prelu_gamma_that_does_not_broadcast_is_refused():
    with pytest.raises(MXNetError, match="does not broadcast"):
        mx.nd.LeakyReLU(mx.nd.ones((3, 4)), mx.nd.ones((2, 4)), act_type="prelu")
