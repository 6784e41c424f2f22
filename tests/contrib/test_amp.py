"""mx.contrib.amp: the float16 conversion against MXNet 1.9.1's, and what the converted networks
compute.

The golden file (tests/data/contrib/amp_golden.npz, written by gen_amp_golden.py under MXNet)
holds, per case, the float32 symbol's JSON, the conversion's arguments and MXNet's converted
JSON; each case here loads the same JSON into minimod, converts it and compares node for node
(operator, name, attributes, inputs), the heads and, for convert_model, the parameter dtypes.
The runnable cases then bind the converted network, run it with float16 where MXNet's rules put
float16, and compare with MXNet's float32 outputs within float16's precision.
"""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.contrib import amp
from minimod.contrib.amp import reduce_precision
from minimod.contrib.amp.lists import output_names, symbol_fp16

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "contrib",
                              "amp_golden.npz"))
CASES = sorted({k.split("/")[0] for k in GOLDEN.files})


def _batchnorm_takes_float16():
    """Whether BatchNorm types as MXNet's does: float16 data, float32 parameters, statistics
    and mean/var outputs (AMP leaves BatchNorm in float16 after a float16 convolution)."""
    from minimod.ops.registry import create_op
    try:
        ins, outs = create_op("BatchNorm").infer_type([np.dtype(np.float16)] + [None] * 4,
                                                      [None] * 3)
    except mx.MXNetError:
        return False
    return ins[1] == np.float32 and outs[1] == np.float32


needs_bn16 = pytest.mark.skipif(
    not _batchnorm_takes_float16(),
    reason="BatchNorm must take float16 data with float32 parameters (MXNet's BatchNormType)")


def cases(names):
    """`names` as pytest params, the ones whose network has a BatchNorm marked needs_bn16."""
    return [pytest.param(c, marks=needs_bn16) if "BatchNorm" in str(GOLDEN[c + "/sym"]) else c
            for c in names]


def golden_text(key):
    return str(GOLDEN[key])


def nodes_of(text):
    """(op, name, attrs, [(source name, index)]) per node, and the heads, of symbol JSON."""
    doc = json.loads(text)
    nodes = doc["nodes"]
    rows = [(n["op"], n["name"], n.get("attrs", {}),
             [(nodes[i[0]]["name"], i[1]) for i in n["inputs"]]) for n in nodes]
    heads = [(nodes[h[0]]["name"], h[1]) for h in doc["heads"]]
    return rows, heads


def convert(case):
    sym = mx.sym.load_json(golden_text(case + "/sym"))
    kwargs = json.loads(golden_text(case + "/kwargs"))
    if not kwargs.pop("model", False):
        return sym, amp.convert_symbol(sym, **kwargs), None
    arg_params, aux_params = case_params(case, sym)
    converted, args, auxs = amp.convert_model(sym, arg_params, aux_params, **kwargs)
    return sym, converted, dict(args, **auxs)


def case_params(case, sym):
    shapes = {"data": (2, 1, 6, 6)}
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    args = {n: mx.nd.ones(s) for n, s in zip(sym.list_arguments(), arg_shapes)
            if n not in ("data", "softmax_label")}
    auxs = {n: mx.nd.ones(s) for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    return args, auxs


@pytest.mark.parametrize("case", cases(CASES))
def test_conversion_matches_mxnet(case):
    _, converted, params = convert(case)
    want_nodes, want_heads = nodes_of(golden_text(case + "/conv"))
    got_nodes, got_heads = nodes_of(converted.tojson(remove_amp_cast=False))
    assert [n[:2] for n in got_nodes] == [n[:2] for n in want_nodes]
    assert got_nodes == want_nodes
    assert got_heads == want_heads
    if params is not None:
        want = {k.split(":", 1)[1]: str(GOLDEN[k]) for k in GOLDEN.files
                if k.startswith(case + "/dtype:")}
        assert {k: np.dtype(v.dtype).name for k, v in params.items()} == want


@pytest.mark.parametrize("case", cases(CASES))
def test_remove_amp_cast_matches_mxnet(case):
    """MXNet's default tojson() (and save()) drops the casts, as minimod's does."""
    _, converted, _ = convert(case)
    want = nodes_of(golden_text(case + "/conv_removed"))
    assert nodes_of(converted.tojson()) == want
    stripped = mx.sym.Symbol(reduce_precision.remove_amp_cast(converted._outputs))
    assert nodes_of(stripped.tojson(remove_amp_cast=False)) == want
    assert nodes_of(converted.tojson(remove_amp_cast=False)) != want


@needs_bn16
def test_conversion_leaves_the_original_alone():
    sym = mx.sym.load_json(golden_text("convnet/sym"))
    before = sym.tojson()
    amp.convert_symbol(sym)
    assert sym.tojson() == before


def run(sym, inputs):
    """(the input dtypes, the outputs) of `sym` bound with `inputs` (NumPy arrays), each
    input converted to the dtype the symbol's type inference gives it; inference forward."""
    data = {k: np.float32 for k in sym.list_inputs() if k in DATA_INPUTS}
    arg_types, _, aux_types = sym.infer_type_partial(**data)
    args = {n: mx.nd.array(inputs[n], dtype=t or np.float32)
            for n, t in zip(sym.list_arguments(), arg_types)}
    aux = {n: mx.nd.array(inputs[n], dtype=t or np.float32)
           for n, t in zip(sym.list_auxiliary_states(), aux_types)}
    exe = sym.bind(mx.cpu(), args=args, aux_states=aux, grad_req="null")
    dtypes = {n: a.dtype for n, a in list(args.items()) + list(aux.items())}
    return dtypes, [o.asnumpy() for o in exe.forward(is_train=False)]


DATA_INPUTS = ("data", "a", "b", "x", "w", "softmax_label", "lro_label")
RUNNABLE = sorted(c for c in CASES if c + "/out_fp32:0" in GOLDEN.files)


@pytest.mark.parametrize("case", cases(RUNNABLE))
def test_converted_network_runs_in_float16(case):
    sym, converted, _ = convert(case)
    inputs = {k.split(":", 1)[1]: GOLDEN[k] for k in GOLDEN.files if k.startswith(case + "/in:")}
    want = [GOLDEN["%s/out_fp32:%d" % (case, i)] for i in range(len(sym.list_outputs()))]
    _, plain = run(sym, inputs)
    for got, ref in zip(plain, want):  # minimod's float32 run is MXNet's
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    dtypes, mixed = run(converted, inputs)
    # the float16 operators did run in float16 (the excluded ones in float32)
    excluded = json.loads(golden_text(case + "/kwargs")).get("excluded_sym_names", [])
    internals = converted.get_internals()
    _, out_types, _ = internals.infer_type_partial(**dtypes)
    kinds = dict(zip(internals.list_outputs(), out_types))
    for node in json.loads(converted.tojson(remove_amp_cast=False))["nodes"]:
        if node["op"] in ("FullyConnected", "Convolution"):
            want_type = np.float32 if node["name"] in excluded else np.float16
            assert kinds[node["name"] + "_output"] == want_type, node["name"]
    for got, ref in zip(mixed, want):
        assert got.dtype == np.float32  # every head is cast back
        scale = max(1.0, float(np.abs(ref).max()))
        np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-2 * scale)


@pytest.mark.parametrize("case", cases(["convnet", "convnet_plain"]))
def test_convnet_trains_with_module(case):
    """A converted convnet binds in a Module, runs forward and backward, and takes a step."""
    sym = mx.sym.load_json(golden_text(case + "/sym"))
    converted = amp.convert_symbol(sym)
    mod = mx.mod.Module(converted, data_names=["data"], label_names=["softmax_label"])
    mod.bind(data_shapes=[("data", (2, 3, 8, 8))], label_shapes=[("softmax_label", (2,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    batch = mx.io.DataBatch([mx.nd.array(GOLDEN["convnet/in:data"])],
                            [mx.nd.array([0, 1])])
    before = mod.get_params()[0]["fc_weight"].asnumpy().copy()
    mod.forward_backward(batch)
    mod.update()
    after = mod.get_params()[0]["fc_weight"].asnumpy()
    assert after.dtype == np.float32 and np.isfinite(after).all()
    assert not np.array_equal(before, after)
    grads = mod._exec_group.grad_arrays
    assert all(g[0].dtype == np.float32 for g in grads)


@needs_bn16
def test_convert_model_casts_params_in_place():
    sym = mx.sym.load_json(golden_text("model/sym"))
    args, auxs = case_params("model", sym)
    given = args
    conv, out_args, _ = amp.convert_model(sym, args, auxs, cast_optional_params=True)
    assert out_args is given and out_args["fc_weight"].dtype == np.float16
    assert conv.attr_dict()["fc_weight"]["__dtype__"] == "2"
    # and the float16 parameters bind as such
    exe = conv.simple_bind(mx.cpu(), data=(2, 1, 6, 6), grad_req="null")
    assert exe.arg_dict["fc_weight"].dtype == np.float16
    assert exe.arg_dict["bn1_gamma"].dtype == np.float32


def test_convert_bucketing_module():
    def sym_gen(seq_len):
        data = mx.sym.var("data")
        fc = mx.sym.FullyConnected(mx.sym.Reshape(data, shape=(-1, seq_len)), num_hidden=3,
                                   name="fc")
        return mx.sym.SoftmaxOutput(fc, name="softmax"), ("data",), ("softmax_label",)

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=4)
    mod.bind(data_shapes=[("data", (2, 4))], label_shapes=[("softmax_label", (2,))])
    mod.init_params()
    converted = amp.convert_bucketing_module(mod)
    graph = json.loads(converted._buckets[4]._symbol.tojson(remove_amp_cast=False))
    ops = [n["op"] for n in graph["nodes"]]
    assert ops.count("amp_cast") == 4  # data, weight, bias to float16; fc back to float32
    converted.bind(data_shapes=[("data", (2, 4))], label_shapes=[("softmax_label", (2,))])
    converted.forward(mx.io.DataBatch([mx.nd.ones((2, 4))], [mx.nd.array([0, 1])],
                                      bucket_key=4, provide_data=[("data", (2, 4))]),
                      is_train=False)
    out = converted.get_outputs()[0].asnumpy()
    np.testing.assert_allclose(out.sum(axis=1), 1, rtol=1e-3)


# ------------------------------------------------------------------------ lists and refusals

def test_lists_are_mxnets_restricted_to_minimod():
    from minimod.ops.registry import list_ops
    ops = list_ops()
    assert amp.list_lp16_ops("float16") == ["Convolution", "Deconvolution", "FullyConnected",
                                            "RNN"]
    for fn, full in ((amp.list_fp32_ops, symbol_fp16.FP32_FUNCS),
                     (amp.list_lp16_fp32_ops, symbol_fp16.FP16_FP32_FUNCS),
                     (amp.list_widest_type_cast, symbol_fp16.WIDEST_TYPE_CASTS),
                     (amp.list_loss_output_functions, symbol_fp16.LOSS_OUTPUT_FUNCTIONS)):
        got = fn("float16")
        assert got == [n for n in full if n in ops]
        assert set(got) <= set(ops)
    assert "softmax" in amp.list_fp32_ops("float16")
    assert "elemwise_add" in amp.list_widest_type_cast(np.float16)
    assert amp.list_conditional_fp32_ops("float16") == [
        ("Activation", "act_type", ["softrelu"]), ("LeakyReLU", "act_type", ["elu", "selu"])]
    assert amp.list_lp16_use_fp32_params("float16") is None


def test_output_names_agree_with_minimod_ops():
    """The suffixes MXNet uses are minimod's output names for the named operators."""
    from minimod.ops.registry import create_op
    assert create_op("SliceChannel", {"num_outputs": "3"}).outputs() == [
        "output0", "output1", "output2"]
    assert create_op("BatchNorm").outputs()[0] == "output"
    for name in ("FullyConnected", "Convolution", "Activation", "elemwise_add", "Concat"):
        assert name in output_names.OPS_WITH_OUTPUT_NAMES
    assert "Flatten" not in output_names.OPS_WITH_OUTPUT_NAMES


@pytest.mark.parametrize("call", [
    lambda: amp.init(),
    lambda: amp.init_trainer(None),
    lambda: amp.scale_loss(None, None),
    lambda: amp.unscale(None),
    lambda: amp.convert_hybrid_block(None),
])
def test_refused_calls_say_what_to_use(call):
    with pytest.raises(NotImplementedError) as err:
        call()
    text = str(err.value)
    assert "convert_symbol" in text


def test_init_names_the_reason():
    with pytest.raises(NotImplementedError, match="Symbol arithmetic"):
        amp.init()
    with pytest.raises(NotImplementedError, match="Gluon"):
        amp.init_trainer(None)


@pytest.mark.parametrize("call", [
    lambda s: amp.convert_symbol(s, target_dtype="bfloat16"),
    lambda s: amp.list_lp16_ops("bfloat16"),
    lambda s: amp.init("bfloat16"),
])
def test_bfloat16_is_refused(call):
    with pytest.raises(NotImplementedError, match="bfloat16"):
        call(mx.sym.var("x"))


def test_bad_arguments():
    s = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2)
    with pytest.raises(ValueError, match="float16"):
        amp.convert_symbol(s, target_dtype="float64")
    with pytest.raises(TypeError, match="Symbol"):
        amp.convert_symbol("not a symbol")
    with pytest.raises(ValueError, match="one list only"):
        amp.convert_symbol(s, target_dtype_ops=["FullyConnected"], fp32_ops=["FullyConnected"])
    with pytest.raises(ValueError, match="none of AMP's lists"):
        amp.convert_symbol(s, fp32_ops=["NoSuchOp"])
    with pytest.raises(TypeError, match="conditional_fp32_ops"):
        amp.convert_symbol(s, conditional_fp32_ops=[("Activation", "act_type")])
    with pytest.raises(mx.MXNetError, match="not an input"):
        amp.convert_symbol(s, data_names=["nope"])
    with pytest.raises(TypeError, match="arg_params"):
        amp.convert_model(s, None, {})


def test_contrib_namespace():
    assert mx.contrib.amp.convert_symbol is amp.convert_symbol
    assert mx.contrib.amp.amp.convert_model is amp.convert_model


def test_converted_mlp_on_each_device(ctx):
    """The converted MLP trains one step on every backend (the casts run on the device)."""
    converted = amp.convert_symbol(mx.sym.load_json(golden_text("mlp/sym")))
    mod = mx.mod.Module(converted, context=ctx)
    mod.bind(data_shapes=[("data", (4, 10))], label_shapes=[("softmax_label", (4,))])
    mx.random.seed(1)
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
    before = mod.get_params()[0]["fc1_weight"].asnumpy().copy()
    batch = mx.io.DataBatch([mx.nd.array(GOLDEN["mlp/in:data"])],
                            [mx.nd.array(GOLDEN["mlp/in:softmax_label"])])
    mod.forward(batch, is_train=False)
    probs = mod.get_outputs()[0].asnumpy()
    assert probs.dtype == np.float32
    np.testing.assert_allclose(probs.sum(axis=1), 1, rtol=1e-3)
    mod.forward_backward(batch)
    mod.update()
    weight = mod.get_params()[0]["fc1_weight"].asnumpy()
    assert weight.dtype == np.float32 and not np.allclose(weight, before)


def test_save_drops_the_casts_unless_asked_to_keep_them(tmp_path):
    _, converted, _ = convert(next(c for c in CASES if "amp_cast" in golden_text(c + "/conv")))
    converted.save(str(tmp_path / "default.json"))
    converted.save(str(tmp_path / "kept.json"), remove_amp_cast=False)
    ops = {name: [n["op"] for n in json.loads((tmp_path / name).read_text())["nodes"]]
           for name in ("default.json", "kept.json")}
    assert "amp_cast" not in ops["default.json"] and "amp_cast" in ops["kept.json"]
