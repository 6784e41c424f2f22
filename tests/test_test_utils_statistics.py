"""mx.test_utils' generator checks and array makers (minimod/test_utils/statistics.py and
arrays.py): the chi-square p-values against the distribution's known quantiles, the checks
accepting a right generator and rejecting a wrong one, and the makers' shapes and
properties."""
import math
import statistics

import numpy as np
import pytest

import minimod as mx
from minimod.test_utils.statistics import _upper_gamma

T = mx.test_utils


@pytest.mark.parametrize("stat, dof, p", [(3.841459, 1, 0.05), (11.070498, 5, 0.05),
                                          (2.0, 4, math.exp(-1) * 2), (0.5, 2, math.exp(-0.25)),
                                          (30.0, 10, 0.000857), (0.01, 3, 0.999734)])
def test_chi_square_tail_matches_the_distribution(stat, dof, p):
    np.testing.assert_allclose(_upper_gamma(dof / 2, stat / 2), p, rtol=2e-3)


def test_generator_checks_accept_the_right_law_and_reject_a_wrong_one():
    rng = np.random.RandomState(0)
    normal = statistics.NormalDist()
    buckets, probs = T.gen_buckets_probs_with_ppf(
        lambda q: -np.inf if q == 0 else np.inf if q == 1 else normal.inv_cdf(q), 8)
    assert len(buckets) == 8 and probs == [0.125] * 8
    pvalues = T.verify_generator(lambda n: rng.normal(size=n), buckets, probs,
                                 nsamples=50000, nrepeat=4)
    assert len(pvalues) == 4
    with pytest.raises(AssertionError, match="Generator test fails"):
        T.verify_generator(lambda n: rng.normal(0.2, 1, size=n), buckets, probs,
                           nsamples=50000, nrepeat=3)
    p, observed, expected = T.chi_square_check(lambda n: rng.randint(0, 4, n), [0, 1, 2, 3],
                                               [0.25] * 4, 40000)
    assert p > 0.001 and observed.sum() == 40000 and list(expected) == [10000] * 4
    assert T.mean_check(lambda n: rng.normal(3, 2, n), 3, 2, 100000)
    assert not T.mean_check(lambda n: rng.normal(3.1, 2, n), 3, 2, 100000)
    assert T.var_check(lambda n: rng.normal(0, 2, n), 2, 100000)
    assert not T.var_check(lambda n: rng.normal(0, 2.2, n), 2, 100000)


def test_array_makers():
    np.random.seed(1)
    assert T.create_2d_tensor(3, 4).asnumpy().tolist() == [[0] * 4, [1] * 4, [2] * 4]
    assert T.create_vector(5).asnumpy().tolist() == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(T.get_identity_mat_batch(3).asnumpy(), np.stack([np.eye(3)] * 2))
    q = T.new_orthonormal_matrix_2d(4)
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-10)
    sym = T.new_sym_matrix_with_real_eigvals_nd((2, 3, 3))
    np.testing.assert_allclose(sym, np.swapaxes(sym, -1, -2), atol=1e-10)
    eig = np.linalg.eigvals(T.new_matrix_with_real_eigvals_2d(4))
    assert np.abs(eig.imag).max() < 1e-8 and np.abs(eig.real).max() < 10
    np.testing.assert_array_equal(T.assign_each2(np.array([1, 2]), np.array([3, 4]),
                                                 lambda a, b: a * b), [3, 8])
    a, b = mx.sym.var("a"), mx.sym.var("b")
    assert T.same_symbol_structure(mx.sym.relu(a) + a, mx.sym.relu(b) + b)
    assert not T.same_symbol_structure(mx.sym.relu(a) + a, mx.sym.tanh(b) + b)
    with pytest.raises(AssertionError, match=r"\(2,\) and b.shape = \(3,\)"):
        T.checkShapes(np.zeros(2), np.zeros(3))
