"""The fast `mx.nd` routines (minimod/ndarray/routines/) and keywords: a keyword a routine
does not take runs the call as its operator, which takes MXNet's other parameters and refuses
an unknown one naming the valid ones (as MXNet does); nothing is dropped silently."""
import numpy as np
import pytest

import minimod as mx
from minimod.base import OpParamError

X = mx.nd.array(np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("call, message", [
    (lambda: mx.nd.sum(X, axis=1, keepdim=True), "no parameter 'keepdim'.*keepdims"),
    (lambda: mx.nd.mean(X, axes=1), "no parameter 'axes'"),
    (lambda: mx.nd.sqrt(X, foo=1), "takes no parameters"),
    (lambda: mx.nd.concat(X, X, dims=0), "no parameter 'dims'.*dim, num_args"),
    (lambda: mx.nd.dot(X, X.T, transpose_x=True), "no parameter 'transpose_x'"),
    (lambda: mx.nd.softmax(X, axes=0), "no parameter 'axes'"),
])
def test_a_misspelt_keyword_is_refused_naming_the_parameters(call, message):
    with pytest.raises(OpParamError, match=message):
        call()


@pytest.mark.parametrize("call", [
    lambda: mx.nd.sign(X, foo=1), lambda: mx.nd.argmax(X, axis=1, keepdim=True),
    lambda: mx.nd.add(X, X, bar=2), lambda: mx.nd.zeros_like(X, bar=2),
])
def test_the_routines_without_an_operator_path_refuse_it_too(call):
    with pytest.raises(TypeError, match="unexpected keyword"):
        call()


def test_mxnets_other_parameters_go_to_the_operator_with_the_same_numbers():
    np.testing.assert_array_equal(mx.nd.concat(X, X, dim=0, num_args=2).asnumpy(),
                                  mx.nd.concat(X, X, dim=0).asnumpy())
    np.testing.assert_array_equal(mx.nd.add_n(X, X, num_args=2).asnumpy(), 2 * X.asnumpy())
    np.testing.assert_array_equal(mx.nd.sum(X, axis=1, keepdims=True, name="s").asnumpy(),
                                  [[3.0], [12.0]])


def test_the_samplers_refuse_an_unknown_keyword():
    with pytest.raises(TypeError, match="unexpected keyword.*'sahpe'"):
        mx.nd.random.uniform(0, 1, sahpe=(2,))
    assert mx.nd.random.normal(0, 1, shape=(3,), name="n").shape == (3,)
