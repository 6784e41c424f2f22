"""mx.rnn against MXNet 1.9.1: graphs node for node, and the numbers of a training pass.

The golden files come from tests/data/rnn/gen_rnn_golden.py run under MXNet; the cases are the
builders in tests/data/rnn/rnn_cases.py, run here with minimod.
"""
import json
import os
import sys
import warnings

import numpy as np
import pytest

import minimod as mx

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "rnn")
sys.path.insert(0, DATA)
import rnn_cases  # noqa: E402

with open(os.path.join(DATA, "rnn_golden.json")) as _f:
    GOLDEN = json.load(_f)["cases"]
ARRAYS = np.load(os.path.join(DATA, "rnn_golden.npz"))
NUMBER_CASES = [name for name, meta in GOLDEN.items() if meta["numbers"]]


def _build(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rnn_cases.build(mx, name)


def _canonical(json_text):
    graph = json.loads(json_text)
    graph.pop("attrs", None)
    return graph


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_graph_matches_mxnet(name):
    sym, shapes, _ = _build(name)
    want = GOLDEN[name]
    assert sym.list_arguments() == want["arguments"]
    assert sym.list_outputs() == want["outputs"]
    assert sym.list_auxiliary_states() == want["aux"]
    got, expected = _canonical(sym.tojson()), _canonical(want["json"])
    for i, (g, e) in enumerate(zip(got["nodes"], expected["nodes"])):
        assert g == e, "node %d differs:\n minimod %s\n mxnet   %s" % (i, g, e)
    assert got == expected
    arg_shapes, out_shapes, _ = sym.infer_shape(**shapes)
    assert [list(s) for s in arg_shapes] == want["arg_shapes"]
    assert [list(s) for s in out_shapes] == want["out_shapes"]


@pytest.mark.parametrize("name", NUMBER_CASES)
def test_training_pass_matches_mxnet(name):
    sym, shapes, _ = _build(name)
    arg_shapes, out_shapes, _ = sym.infer_shape(**shapes)
    values = rnn_cases.arg_values(sym, arg_shapes, seed=len(name))
    exe = sym.simple_bind(mx.cpu(), grad_req="write", **shapes)
    for key, value in values.items():
        exe.arg_dict[key][:] = value
    exe.forward(is_train=True)
    heads = rnn_cases.head_grads(out_shapes, seed=len(name))
    exe.backward([mx.nd.array(h) for h in heads])
    for i, out in enumerate(exe.outputs):
        np.testing.assert_allclose(out.asnumpy(), ARRAYS["%s/out/%d" % (name, i)],
                                   rtol=1e-4, atol=1e-5, err_msg="output %d" % i)
    for key in sym.list_arguments():
        np.testing.assert_allclose(exe.grad_dict[key].asnumpy(),
                                   ARRAYS["%s/grad/%s" % (name, key)], rtol=1e-4, atol=1e-5,
                                   err_msg="gradient of %s" % key)


def test_unroll_twice_gives_the_same_graph():
    cell = mx.rnn.LSTMCell(4)
    with mx.name.NameManager():
        first, _ = cell.unroll(3, mx.sym.Variable("data"), merge_outputs=True)
    with mx.name.NameManager():
        second, _ = cell.unroll(3, mx.sym.Variable("data"), merge_outputs=True)
    assert first.tojson() == second.tojson()


def test_lstm_bias_initializer_attr():
    cell = mx.rnn.LSTMCell(4, prefix="p_", forget_bias=2.0)
    out, _ = cell.unroll(2, mx.sym.Variable("data"))
    attrs = out[0].attr_dict() if isinstance(out, list) else out.attr_dict()
    assert json.loads(attrs["p_i2h_bias"]["__init__"]) == ["lstmbias", {"forget_bias": 2.0}]


def test_unpack_pack_roundtrip_plain_and_fused():
    rng = np.random.RandomState(0)
    cell = mx.rnn.LSTMCell(3, prefix="c_")
    args = {"c_i2h_weight": mx.nd.array(rng.randn(12, 5)), "c_i2h_bias": mx.nd.array(rng.randn(12)),
            "c_h2h_weight": mx.nd.array(rng.randn(12, 3)), "c_h2h_bias": mx.nd.array(rng.randn(12))}
    unpacked = cell.unpack_weights(args)
    assert sorted(unpacked) == sorted("c_%s%s_%s" % (g, gate, kind) for g in ("i2h", "h2h")
                                      for gate in ("_i", "_f", "_c", "_o")
                                      for kind in ("weight", "bias"))
    np.testing.assert_array_equal(unpacked["c_i2h_f_weight"].asnumpy(),
                                  args["c_i2h_weight"].asnumpy()[3:6])
    packed = cell.pack_weights(unpacked)
    for key, value in args.items():
        np.testing.assert_array_equal(packed[key].asnumpy(), value.asnumpy())

    fused = mx.rnn.FusedRNNCell(3, num_layers=2, mode="gru", bidirectional=True, prefix="f_")
    size = fused._total_size(5)
    flat = mx.nd.array(rng.randn(size))
    parts = fused.unpack_weights({"f_parameters": flat})
    assert parts["f_r1_h2h_z_weight"].shape == (3, 3)
    assert parts["f_l1_i2h_r_weight"].shape == (3, 6)
    back = fused.pack_weights(parts)
    np.testing.assert_array_equal(back["f_parameters"].asnumpy(), flat.asnumpy())


def test_fused_unpacked_weights_drive_the_unfused_cells():
    """A fused network and its unfuse() give the same outputs with unpacked weights."""
    fused = mx.rnn.FusedRNNCell(4, num_layers=2, mode="lstm", bidirectional=True, prefix="f_")
    with mx.name.NameManager():
        fsym, _ = fused.unroll(3, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    with mx.name.NameManager():
        usym, _ = fused.unfuse().unroll(3, mx.sym.Variable("data"), layout="TNC",
                                        merge_outputs=True)
    rng = np.random.RandomState(1)
    data = rng.uniform(-1, 1, (3, 2, 5)).astype("float32")
    fexe = fsym.simple_bind(mx.cpu(), data=data.shape)
    flat = rng.uniform(-0.5, 0.5, fexe.arg_dict["f_parameters"].shape).astype("float32")
    fexe.arg_dict["f_parameters"][:] = flat
    fexe.arg_dict["data"][:] = data
    want = fexe.forward()[0].asnumpy()
    unpacked = fused.unpack_weights({"f_parameters": mx.nd.array(flat)})
    plain = fused.unfuse().pack_weights(unpacked)
    uexe = usym.simple_bind(mx.cpu(), data=data.shape)
    uexe.arg_dict["data"][:] = data
    for key, value in plain.items():
        uexe.arg_dict[key][:] = value
    np.testing.assert_allclose(uexe.forward()[0].asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_encode_sentences():
    sents = [["a", "b", "c"], ["b", "d"]]
    coded, vocab = mx.rnn.encode_sentences(sents, invalid_label=0, start_label=0)
    assert vocab == {"\n": 0, "a": 1, "b": 2, "c": 3, "d": 4}
    assert coded == [[1, 2, 3], [2, 4]]
    coded, vocab2 = mx.rnn.encode_sentences([["a", "zz"]], vocab=dict(vocab),
                                            unknown_token="<unk>", start_label=5)
    assert coded == [[1, 5]] and vocab2["<unk>"] == 5
    with pytest.raises(KeyError):
        mx.rnn.encode_sentences([["zz"]], vocab=dict(vocab))


def test_bucket_sentence_iter():
    rng = np.random.RandomState(0)
    sentences = [list(rng.randint(1, 9, size=n)) for n in [3] * 5 + [5] * 4 + [9]]
    it = mx.rnn.BucketSentenceIter(sentences, batch_size=2, buckets=[4, 6], invalid_label=0)
    assert it.default_bucket_key == 6
    assert it.provide_data[0].shape == (2, 6) and it.provide_label[0].name == "softmax_label"
    batches = list(it)
    assert sorted(b.bucket_key for b in batches) == [4, 4, 6, 6]
    for b in batches:
        data, label = b.data[0].asnumpy(), b.label[0].asnumpy()
        assert data.shape == (2, b.bucket_key) == b.provide_data[0].shape
        np.testing.assert_array_equal(label[:, :-1], data[:, 1:])
        assert (label[:, -1] == 0).all()
    it_tn = mx.rnn.BucketSentenceIter(sentences, batch_size=2, buckets=[4, 6], layout="TN")
    batch = it_tn.next()
    assert batch.data[0].shape == (batch.bucket_key, 2)
    assert it_tn.provide_data[0].shape == (6, 2)


def test_rnn_checkpoint_roundtrip(tmp_path):
    cell = mx.rnn.LSTMCell(3, prefix="c_")
    with mx.name.NameManager():
        out, _ = cell.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    rng = np.random.RandomState(2)
    args = {"c_i2h_weight": mx.nd.array(rng.randn(12, 4)), "c_i2h_bias": mx.nd.array(rng.randn(12)),
            "c_h2h_weight": mx.nd.array(rng.randn(12, 3)), "c_h2h_bias": mx.nd.array(rng.randn(12))}
    prefix = str(tmp_path / "m")
    mx.rnn.do_rnn_checkpoint(cell, prefix)(0, out, args, {})
    saved = mx.nd.load(prefix + "-0001.params")
    assert "arg:c_i2h_f_weight" in saved
    _, arg, aux = mx.rnn.load_rnn_checkpoint(cell, prefix, 1)
    assert aux == {}
    for key, value in args.items():
        np.testing.assert_array_equal(arg[key].asnumpy(), value.asnumpy())
