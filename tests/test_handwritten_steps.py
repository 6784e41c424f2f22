"""benchmarks/handwritten.py's NumPy steps compute the same gradients as minimod's Module on the
same model, weights and batch, so RESULTS.md may use them as the floor of that arithmetic."""
import os
import sys

import numpy as np
import pytest

import minimod as mx

BENCH = os.path.join(os.path.dirname(__file__), "..", "benchmarks")


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(BENCH)
    import handwritten
    import workloads
    yield handwritten, workloads
    for name in ("handwritten", "workloads"):
        sys.modules.pop(name, None)


def _params(net, model):
    if net == "mlp":
        names = ["fc1", "fc2", "fc3"]
        pairs = list(zip(model.w, model.gw)) + list(zip(model.b, model.gb))
        weights = [(n + "_weight", w, g) for n, (w, g) in zip(names, pairs[:3])]
        return weights + [(n + "_bias", b, g) for n, (b, g) in zip(names, pairs[3:])]
    shapes = [(20, 1, 5, 5), (50, 20, 5, 5), (500, 800), (10, 500)]
    names = ["conv1", "conv2", "fc1", "fc2"]
    out = [(n + "_weight", w, g, s) for n, w, g, s in zip(names, model.ws, model.gws, shapes)]
    out = [(n, w.reshape(s), g.reshape(s)) for n, w, g, s in out]
    return out + [(n + "_bias", b, g) for n, b, g in zip(names, model.bs, model.gbs)]


@pytest.mark.parametrize("net", ["mlp", "lenet"])
def test_hand_step_gradients_equal_the_module_gradients(bench, net):
    handwritten, workloads = bench
    batch = 8
    model = handwritten.MODELS[net](batch)
    model.opt.update = lambda: None          # keep the gradients the step computed
    x, y = handwritten.data(net, batch)
    params = _params(net, model)
    arg_params = {name: mx.nd.array(w) for name, w, _ in params}
    mod = mx.mod.Module(workloads.symbol(mx, net), data_names=("data",),
                        label_names=("softmax_label",))
    mod.bind(data_shapes=[("data", x.shape)], label_shapes=[("softmax_label", (batch,))])
    mod.init_params(arg_params=arg_params)
    mod.forward_backward(mx.io.DataBatch(data=[mx.nd.array(x)], label=[mx.nd.array(y)]))
    model.step(x, y)
    grads = dict(zip(mod._exec_group.param_names,
                     (g[0].asnumpy() for g in mod._exec_group.grad_arrays)))
    for name, _, hand_grad in params:
        # the hand step scales the loss gradient by 1/batch; Module leaves that to rescale_grad
        np.testing.assert_allclose(hand_grad * batch, grads[name], rtol=2e-4, atol=2e-6,
                                   err_msg=name)


def test_flat_buffer_hand_mlp_trains_exactly_like_the_tensor_by_tensor_one(bench):
    """profile_steps compares minimod with both hand MLPs: the flat-buffer one is the same
    arithmetic, element for element, with the update in four passes over one buffer."""
    handwritten, _ = bench
    dims = (6, 9, 7, 3)
    x, y = handwritten.data("mlp", 5, dims=dims)
    plain = handwritten.MLP(5, dims=dims)
    flat = handwritten.MLP(5, dims=dims, flat=True)
    assert flat.w[1].base is flat.opt.weight and flat.gb[2].base is flat.opt.grad
    losses = [(plain.step(x, y), flat.step(x, y)) for _ in range(4)]
    assert losses[-1][0] < losses[0][0]
    assert all(a == b for a, b in losses)
    for a, b in zip(plain.w + plain.b, flat.w + flat.b):
        assert np.array_equal(a, b)


def test_summary_has_the_hand_peer_and_same_round_ratios_to_it(bench, tmp_path, monkeypatch):
    import json

    import summarize
    raw = tmp_path / "raw.jsonl"
    recs = []
    for rnd, (mm, mx_, hand) in enumerate([(100.0, 50.0, 80.0), (40.0, 20.0, 50.0)], 1):
        for lib, sps in (("minimod", mm), ("mxnet", mx_), ("numpy", hand)):
            recs.append({"lib": lib, "net": "mlp", "batch": 32, "mode": "module", "round": rnd,
                         "samples_per_s": sps, "ms_per_step": 32e3 / sps, "peak_rss_mb": 50,
                         "threads": 2})
    raw.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    table = summarize.main([str(raw)])
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in table.splitlines()
            if line.startswith("| ")}
    header = rows["peer"]
    col = header.index("x hand NumPy")
    # minimod / hand per round: 1.25 and 0.8 -> median 1.02 [0.80-1.25]
    assert rows["minimod_module"][col] == "1.02 [0.80-1.25]"
    assert rows["numpy_hand"][header.index("x MXNet")] == "2.05 [1.60-2.50]"
    sys.modules.pop("summarize", None)


def test_hand_lstm_step_gradients_equal_the_fused_rnn_module_gradients(bench):
    """The hand LSTM LM is the fused RNN graph's arithmetic: same gradients for the embedding,
    the packed LSTM weights (W_x, W_h, then b_x, b_h: the hand step's one bias stands for
    both), and the decoder."""
    handwritten, workloads = bench
    batch = 3
    model = handwritten.LSTMLM(batch)
    model.opt.update = lambda: None
    emb, wx, wh, bx, wd, bd = model.ws
    tokens, labels = handwritten.data("lstm", batch)
    packed = np.concatenate([wx.ravel(), wh.ravel(), bx, np.zeros_like(bx)])
    mod = mx.mod.Module(workloads.lstm_symbol(mx, fused=True), data_names=("data",),
                        label_names=("softmax_label",))
    mod.bind(data_shapes=[("data", tokens.shape)], label_shapes=[("softmax_label",
                                                                   labels.shape)])
    mod.init_params(arg_params={"embed_weight": mx.nd.array(emb),
                                "lstm_parameters": mx.nd.array(packed),
                                "pred_weight": mx.nd.array(wd), "pred_bias": mx.nd.array(bd)})
    mod.forward_backward(mx.io.DataBatch(data=[mx.nd.array(tokens)],
                                         label=[mx.nd.array(labels)]))
    model.step(tokens, labels)
    grads = dict(zip(mod._exec_group.param_names,
                     (g[0].asnumpy() for g in mod._exec_group.grad_arrays)))
    g_emb, g_wx, g_wh, g_bx, g_wd, g_bd = (g * batch for g in model.gs)
    n_wx, n_wh = wx.size, wh.size
    lstm = grads["lstm_parameters"]
    pieces = {"embed_weight": (g_emb, grads["embed_weight"]),
              "W_x": (g_wx.ravel(), lstm[:n_wx]), "W_h": (g_wh.ravel(), lstm[n_wx:n_wx + n_wh]),
              "b_x": (g_bx, lstm[n_wx + n_wh:n_wx + n_wh + bx.size]),
              "b_h": (g_bx, lstm[n_wx + n_wh + bx.size:]),
              "pred_weight": (g_wd, grads["pred_weight"]), "pred_bias": (g_bd, grads["pred_bias"])}
    for name, (hand, engine) in pieces.items():
        np.testing.assert_allclose(hand, engine, rtol=2e-4, atol=2e-6, err_msg=name)
