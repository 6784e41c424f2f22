"""Symbol API details: naming, scopes, composition, indexing, attributes, legacy JSON."""
import json
import pickle

import numpy as np
import pytest

import minimod as mx
from minimod.base import GraphError, OpParamError


def test_auto_names_and_prefix():
    with mx.name.NameManager():
        a = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=2)
        b = mx.sym.FullyConnected(a, num_hidden=2)
        assert (a.name, b.name) == ("fullyconnected0", "fullyconnected1")
        assert (a + 1).name == "_plusscalar0"
        assert (a * b).name == "_mul0"
        assert (-a).name == "_mulscalar0"
    with mx.name.Prefix("net_"):
        fc = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=2, name="fc")
    assert fc.list_arguments() == ["x", "net_fc_weight", "net_fc_bias"]


def test_attr_scope_and_hidden_keys():
    with mx.AttrScope(ctx_group="dev1"):
        v = mx.sym.Variable("v", lr_mult=2.0)
    assert v.attr("__ctx_group__") == "dev1" and v.attr("ctx_group") == "dev1"
    assert v.list_attr() == {"__ctx_group__": "dev1", "ctx_group": "dev1",
                             "__lr_mult__": "2.0", "lr_mult": "2.0"}
    v._set_attr(mood="calm")
    assert v.attr("mood") == "calm"
    with pytest.raises(ValueError):
        v._set_attr(mood=3)
    with pytest.raises(ValueError, match="double underscores"):
        mx.sym.Variable("w", foo="bar")
    with pytest.raises(ValueError):
        mx.AttrScope(group=1)


def test_composition_positional_and_keyword():
    x = mx.sym.Variable("x")
    sub = mx.sym.FullyConnected(x, num_hidden=2, name="sub")
    pre = mx.sym.Activation(mx.sym.Variable("data"), act_type="relu", name="act")
    assert sub(x=pre).list_arguments() == ["data", "sub_weight", "sub_bias"]
    assert sub(pre).list_arguments() == ["data", "sub_weight", "sub_bias"]
    assert sub.list_arguments() == ["x", "sub_weight", "sub_bias"]  # the original is untouched
    with pytest.raises(TypeError, match="nope"):
        sub(nope=pre)


def test_group_indexing_internals_children():
    data = mx.sym.Variable("data")
    parts = mx.sym.SliceChannel(data, num_outputs=3, name="sc")
    assert parts.list_outputs() == ["sc_output0", "sc_output1", "sc_output2"]
    assert parts[1].list_outputs() == ["sc_output1"]
    assert parts["sc_output2"].list_outputs() == ["sc_output2"]
    assert parts[0:2].list_outputs() == ["sc_output0", "sc_output1"]
    with pytest.raises(ValueError):
        parts["nothing"]
    fc = mx.sym.FullyConnected(parts[0], num_hidden=4, name="fc")
    group = mx.sym.Group([fc, parts[2]])
    assert group.list_outputs() == ["fc_output", "sc_output2"]
    assert group.name is None and len(group) == 2
    internals = fc.get_internals()
    assert internals.list_outputs() == ["data", "sc_output0", "sc_output1", "sc_output2",
                                        "fc_weight", "fc_bias", "fc_output"]
    assert fc.get_children().list_outputs() == ["sc_output0", "fc_weight", "fc_bias"]
    assert data.get_children() is None


def test_infer_shape_partial_and_incomplete_warning():
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    with pytest.warns(UserWarning, match="Cannot decide shape"):
        assert fc.infer_shape() == (None, None, None)
    args, outs, _ = fc.infer_shape_partial(data=(0, 5))
    assert args == [(0, 5), (3, 5), (3,)] and outs == [(0, 3)]
    z = mx.sym.zeros(shape=(0, 3)) + mx.sym.Variable("b")
    assert z.infer_shape(b=(7, 3))[1] == [(7, 3)]  # a zeros state learns its batch backwards


def test_infer_type_and_cast():
    data = mx.sym.Variable("data")
    net = mx.sym.Cast(mx.sym.FullyConnected(data, num_hidden=3), dtype="float16")
    arg_types, out_types, _ = net.infer_type(data=np.float32)
    assert arg_types == [np.float32] * 3 and out_types == [np.float16]


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.float32])
def test_infer_type_and_bind_propagate_every_float_type(dtype):
    """float64 too: NumPy reads None as float64 (`np.dtype('float64') == None` holds), which
    once kept float64 from spreading to the weights, so binding failed with a dtype clash."""
    data = mx.sym.Variable("data")
    net = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=2, name="fc"),
                            act_type="relu")
    arg_types, out_types, _ = net.infer_type(data=dtype)
    assert arg_types == [dtype] * 3 and out_types == [dtype]
    exe = net.simple_bind(mx.cpu(), data=(2, 3), type_dict={"data": dtype})
    assert [a.dtype for a in exe.arg_arrays] == [dtype] * 3
    assert exe.outputs[0].dtype == dtype


def test_legacy_json_forms_load():
    legacy = {
        "nodes": [
            {"op": "null", "name": "data", "inputs": []},
            {"op": "null", "name": "fc_weight", "param": {}, "attr": {"lr_mult": "2"},
             "inputs": []},
            {"op": "null", "name": "fc_bias", "inputs": []},
            {"op": "FullyConnected", "name": "fc", "param": {"num_hidden": "4"},
             "inputs": [[0, 0], [1, 0], [2, 0]], "backward_source_id": -1},
            {"op": "BatchNorm", "name": "bn", "param": {"fix_gamma": "False"},
             "inputs": [[3, 0]]},
        ],
        "arg_nodes": [],
        "heads": [[4, 0]],
    }
    sym = mx.sym.load_json(json.dumps(legacy))
    assert sym.list_arguments() == ["data", "fc_weight", "fc_bias", "bn_gamma", "bn_beta"]
    assert sym.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert sym.attr_dict()["fc_weight"]["__lr_mult__"] == "2"  # legacy key made hidden
    assert sym.infer_shape(data=(2, 3))[1] == [(2, 4)]
    again = mx.sym.load_json(sym.tojson())
    assert again.tojson() == sym.tojson()


@pytest.mark.parametrize("bad, match", [
    ('{"nodes": [{"op": "Bogus", "name": "b", "inputs": []}], "heads": [[0, 0, 0]]}',
     "unknown operator 'Bogus'"),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "FullyConnected", '
     '"name": "f", "attrs": {"num_hidden": "2", "bogus": "1"}, "inputs": [[0, 0, 0]]}], '
     '"heads": [[1, 0, 0]]}', "bogus"),
    ('{"nodes": [{"op": "null", "name": "x", "attrs": {"k": 1}, "inputs": []}], '
     '"heads": [[0, 0, 0]]}', "non-string"),
    ('not json', "does not parse"),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": [[3, 0, 0]]}], "heads": [[0, 0, 0]]}',
     "does not come before"),
])
def test_bad_json_is_a_clear_error(bad, match):
    with pytest.raises(GraphError, match=match):
        mx.sym.load_json(bad)


def test_save_load_pickle_copy(tmp_path):
    net = mx.sym.Activation(mx.sym.Variable("x"), act_type="tanh", name="t")
    path = tmp_path / "net-symbol.json"
    net.save(str(path))
    assert mx.sym.load(str(path)).tojson() == net.tojson()
    assert pickle.loads(pickle.dumps(net)).tojson() == net.tojson()
    with pytest.raises(mx.MXNetError, match="missing"):
        mx.sym.load(str(tmp_path / "missing-symbol.json"))
    assert not list(tmp_path.glob(".*tmp"))  # no temporary file left behind


def test_arithmetic_rules():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    with pytest.raises(mx.base.NotImplementedForSymbol):  # MXNet's error
        a += b
    with pytest.raises(TypeError):
        a + "text"
    with pytest.raises(OpParamError, match="act_type"):
        mx.sym.Activation(a, act_type="swish")
    ex = (2 ** a + 1 / b - (3 - a) % 2).simple_bind(mx.cpu(), a=(3,), b=(3,))
    ex.arg_dict["a"][:] = [0.5, 1.0, 2.0]
    ex.arg_dict["b"][:] = [1.0, 2.0, 4.0]
    av, bv = np.array([0.5, 1.0, 2.0]), np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), 2 ** av + 1 / bv - (3 - av) % 2,
                               rtol=1e-6)
