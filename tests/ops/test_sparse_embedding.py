"""contrib.SparseEmbedding: Embedding's lookup and weight gradient (MXNet stores that gradient
row-sparse; the values are the same), MXNet's JSON, and MXNet's refusal of a data gradient."""
import json

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError


def _run(op, grad_req):
    net = op(mx.sym.var("d"), input_dim=5, output_dim=3, name="e")
    exe = net.simple_bind(mx.cpu(), d=(2, 3), grad_req=grad_req)
    exe.arg_dict["d"][:] = np.array([[0, 1, 1], [4, 6, -1]])
    exe.arg_dict["e_weight"][:] = np.arange(15).reshape(5, 3)
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward([mx.nd.array(np.arange(18).reshape(2, 3, 3))])
    return out, exe.grad_dict["e_weight"].asnumpy()


def test_lookup_and_weight_gradient_are_embeddings():
    req = {"d": "null", "e_weight": "write"}
    out, grad = _run(mx.sym.contrib.SparseEmbedding, req)
    want_out, want_grad = _run(mx.sym.Embedding, req)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(grad, want_grad)
    # indices are clipped to the table, as MXNet does: 6 reads row 4, -1 reads row 0
    np.testing.assert_array_equal(out[1], np.arange(15).reshape(5, 3)[[4, 4, 0]])
    assert grad[0].tolist() == [15.0, 17.0, 19.0] and grad[2].tolist() == [0.0, 0.0, 0.0]


def test_json_is_mxnets():
    net = mx.sym.contrib.SparseEmbedding(mx.sym.var("d"), input_dim=5, output_dim=3, name="e")
    nodes = json.loads(net.tojson())["nodes"]
    # as MXNet 1.9.1 writes it: the op's attributes also on its weight variable
    assert nodes[1] == {"op": "null", "name": "e_weight",
                        "attrs": {"input_dim": "5", "output_dim": "3"}, "inputs": []}
    assert nodes[2]["op"] == "_contrib_SparseEmbedding"
    assert mx.sym.load_json(net.tojson()).tojson() == net.tojson()


def test_a_data_gradient_is_refused_as_in_mxnet():
    with pytest.raises(MXNetError, match="no gradient for its data.*grad_req='null'"):
        _run(mx.sym.contrib.SparseEmbedding, "write")
