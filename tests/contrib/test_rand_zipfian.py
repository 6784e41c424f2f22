"""`mx.nd.contrib.rand_zipfian` and `mx.sym.contrib.rand_zipfian`: log-uniform candidate
sampling (as used by sampled softmax), against MXNet 1.9.1's expected counts and the
distribution it documents."""
import math

import numpy as np
import pytest

import minimod as mx


def _expected(classes, num_sampled, range_max):
    c = np.asarray(classes, dtype=np.float64)
    return np.log((c + 2) / (c + 1)) / math.log(range_max + 1) * num_sampled


def test_expected_counts_are_mxnets(ctx):
    _, true_count, _ = mx.nd.contrib.rand_zipfian(mx.nd.array([3, 0, 99]), 4, 100, ctx=ctx)
    # what MXNet 1.9.1 returned for the same call
    np.testing.assert_allclose(true_count.asnumpy(),
                               [0.1934021445376569, 0.6007619328947518, 0.00862411355617506],
                               rtol=1e-14)
    assert true_count.dtype == np.float64 and true_count.context == ctx


def test_samples_follow_the_log_uniform_distribution(ctx):
    mx.random.seed(7)
    n, range_max = 200000, 50
    sampled, _, sampled_count = mx.nd.contrib.rand_zipfian(mx.nd.array([1]), n, range_max,
                                                           ctx=ctx)
    s = sampled.asnumpy()
    assert sampled.dtype == np.int64 and s.shape == (n,)
    assert s.min() >= 0 and s.max() < range_max
    np.testing.assert_allclose(sampled_count.asnumpy(), _expected(s, n, range_max), rtol=1e-12)
    freq = np.bincount(s, minlength=range_max) / n
    p = _expected(np.arange(range_max), 1, range_max)
    # five standard errors of a binomial frequency
    assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / n) + 1e-12)


def test_symbol_form_names_types_and_fresh_draws():
    t = mx.sym.var("t")
    outs = mx.sym.contrib.rand_zipfian(t, 6, 100)
    assert isinstance(outs, tuple) and len(outs) == 3
    group = mx.sym.Group(list(outs))
    # MXNet 1.9.1 names the three outputs so
    assert group.list_outputs() == ["_modscalar0_output", "_mulscalar0_output",
                                    "_mulscalar1_output"]
    _, out_shapes, _ = group.infer_shape(t=(2,))
    assert out_shapes == [(6,), (2,), (6,)]
    _, out_types, _ = group.infer_type(t="float32")
    assert out_types == [np.int64, np.float64, np.float64]
    exe = group.simple_bind(mx.cpu(), t=(2,))
    exe.arg_dict["t"][:] = [3, 50]
    mx.random.seed(3)
    first = [a.asnumpy() for a in exe.forward()]
    np.testing.assert_allclose(first[1], _expected([3, 50], 6, 100), rtol=1e-6)
    np.testing.assert_allclose(first[2], _expected(first[0], 6, 100), rtol=1e-12)
    draws = [exe.forward()[0].asnumpy() for _ in range(5)]
    assert any(not np.array_equal(d, first[0]) for d in draws)


@pytest.mark.parametrize("num_sampled, range_max", [(0, 5), (3, 0)])
def test_bad_sizes_are_refused(num_sampled, range_max):
    with pytest.raises(ValueError, match="must be positive"):
        mx.nd.contrib.rand_zipfian(mx.nd.array([1]), num_sampled, range_max)
