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


@pytest.mark.parametrize("fn, args", [
    (mx.nd.clip, (X, 0, 3)), (mx.nd.transpose, (X,)), (mx.nd.take, (X, mx.nd.array([1]))),
    (mx.nd.flatten, (X,)), (mx.nd.where, (X > 2, X, -X)), (mx.nd.topk, (X,)),
    (mx.nd.cast_storage, (X, "csr")), (mx.nd.sparse.dot, (X.tostype("csr"), X.T)),
    (mx.nd.sparse.retain, (X.tostype("row_sparse"), mx.nd.array([1]))),
    (mx.nd.sparse.elemwise_mul, (X.tostype("csr"), X)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_every_routine_takes_mxnets_name_keyword_and_drops_it(fn, args):
    """MXNet's imperative operators all take `name` (code written for both mx.sym and mx.nd
    passes it); it names nothing in an imperative call."""
    with_name, without = fn(*args, name="n"), fn(*args)
    assert with_name.stype == without.stype
    np.testing.assert_array_equal(with_name.asnumpy(), without.asnumpy())


def test_the_sparse_functions_write_into_out():
    out = mx.nd.zeros((2, 2))
    assert mx.nd.sparse.dot(X.tostype("csr"), X.T, out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), X.asnumpy() @ X.asnumpy().T)
    csr = mx.nd.sparse.zeros("csr", (2, 3))
    assert mx.nd.cast_storage(X, "csr", out=csr) is csr and csr.stype == "csr"
    np.testing.assert_array_equal(csr.asnumpy(), X.asnumpy())
    rows = mx.nd.sparse.zeros("row_sparse", (2, 3))
    assert mx.nd.sparse.retain(X.tostype("row_sparse"), mx.nd.array([1]), out=rows) is rows
    np.testing.assert_array_equal(rows.asnumpy(), [[0, 0, 0], X.asnumpy()[1]])


@pytest.mark.parametrize("module", [mx.nd, mx.nd.sparse])
def test_elemwise_operators_take_two_arrays_of_one_shape_as_mxnet(module):
    with pytest.raises(mx.base.ShapeError, match=r"elemwise_add.*\(1, 3\).*\(2, 3\).*"
                                                 r"not broadcast"):
        module.elemwise_add(X, X[0:1])
    np.testing.assert_array_equal(module.elemwise_mul(X, X).asnumpy(), X.asnumpy() ** 2)


def test_elemwise_operators_refuse_a_number_naming_the_routine_that_takes_one():
    with pytest.raises(mx.base.DTypeError, match=r"elemwise_div: input 'rhs'.*mx.nd.divide"):
        mx.nd.elemwise_div(X, 2)
    np.testing.assert_array_equal(mx.nd.broadcast_add(X, X[0:1]).asnumpy(),
                                  X.asnumpy() + X.asnumpy()[0])


def test_power_takes_mxnets_keywords():
    np.testing.assert_array_equal(mx.nd.power(base=X, exp=2).asnumpy(), X.asnumpy() ** 2)
    np.testing.assert_array_equal(mx.nd.power(2, X).asnumpy(), 2 ** X.asnumpy())
