"""The RNN operator with use_sequence_length=True (minimod/ops/rnn_lengths.py): every
sequence runs for its own length, as cuDNN runs MXNet's op. Checked against the op without
lengths run on each sequence alone (whose numbers tests/rnn/test_rnn.py checks against MXNet):
outputs (zero past a sequence's end), final states, and the gradients of the data, the states
and the parameters, for every mode, one and two layers, one and two directions."""
import numpy as np
import pytest

import minimod as mx

T, N, D, H = 4, 3, 2, 3
LENGTHS = np.array([4, 2, 3], np.float32)
GATES = {"rnn_tanh": 1, "rnn_relu": 1, "lstm": 4, "gru": 3}
NAMES = {"x": "data", "p": "parameters", "h": "state", "c": "state_cell",
         "l": "sequence_length"}


def _param_count(mode, layers, dirs):
    return sum(dirs * GATES[mode] * H * ((D if layer == 0 else H * dirs) + H + 2)
               for layer in range(layers))


def _run(ctx, mode, layers, dirs, values, heads, lengths=None):
    """Outputs and gradients of one RNN node bound on ctx (with lengths when given)."""
    names = ["x", "p", "h"] + (["c"] if mode == "lstm" else [])
    kwargs = dict(state_size=H, num_layers=layers, mode=mode, bidirectional=dirs == 2,
                  state_outputs=True)
    args = {n: mx.nd.array(values[n], ctx=ctx) for n in names}
    if lengths is not None:
        names.append("l")
        args["l"] = mx.nd.array(lengths, ctx=ctx)
        kwargs["use_sequence_length"] = True
    net = mx.sym.RNN(**{NAMES[n]: mx.sym.var(n) for n in names}, **kwargs)
    grads = {n: mx.nd.zeros(args[n].shape, ctx=ctx) for n in names if n != "l"}
    exe = net.bind(ctx, args, args_grad=grads,
                   grad_req={n: "null" if n == "l" else "write" for n in names})
    outs = [o.asnumpy() for o in exe.forward(is_train=True)]
    exe.backward([mx.nd.array(h, ctx=ctx) for h in heads])
    return outs, {n: g.asnumpy() for n, g in grads.items()}


@pytest.mark.parametrize("mode", ["rnn_tanh", "lstm", "gru"])
@pytest.mark.parametrize("layers, dirs", [(1, 1), (1, 2), (2, 2)])
def test_each_sequence_runs_for_its_own_length(ctx, mode, layers, dirs):
    rng = np.random.RandomState(3)
    rows = layers * dirs
    values = {"x": rng.uniform(-1, 1, (T, N, D)),
              "p": rng.uniform(-0.5, 0.5, (_param_count(mode, layers, dirs),)),
              "h": rng.uniform(-0.5, 0.5, (rows, N, H)), "c": rng.uniform(-0.5, 0.5, (rows, N, H))}
    heads = [rng.uniform(-1, 1, (T, N, dirs * H)), rng.uniform(-1, 1, (rows, N, H))]
    if mode == "lstm":
        heads.append(rng.uniform(-1, 1, (rows, N, H)))
    outs, grads = _run(ctx, mode, layers, dirs, values, heads, LENGTHS)
    param_grad = np.zeros_like(grads["p"])
    for n, length in enumerate(LENGTHS.astype(int)):
        alone = dict(values, x=values["x"][:length, n:n + 1], h=values["h"][:, n:n + 1],
                     c=values["c"][:, n:n + 1])
        own_heads = [heads[0][:length, n:n + 1]] + [h[:, n:n + 1] for h in heads[1:]]
        ref_outs, ref_grads = _run(ctx, mode, layers, dirs, alone, own_heads)
        np.testing.assert_allclose(outs[0][:length, n], ref_outs[0][:, 0], atol=1e-5)
        assert not outs[0][length:, n].any()  # zero past the end
        for got, want in zip(outs[1:], ref_outs[1:]):
            np.testing.assert_allclose(got[:, n], want[:, 0], atol=1e-5)
        np.testing.assert_allclose(grads["x"][:length, n], ref_grads["x"][:, 0], atol=1e-5)
        assert not grads["x"][length:, n].any()
        for name in ("h", "c") if mode == "lstm" else ("h",):
            np.testing.assert_allclose(grads[name][:, n], ref_grads[name][:, 0], atol=1e-5)
        param_grad += ref_grads["p"]
    np.testing.assert_allclose(grads["p"], param_grad, atol=1e-5)


def test_lengths_with_a_projection():
    """An LSTMP (projection_size 2 of state_size 3) with lengths: sequence by sequence too."""
    from minimod.ops.rnn_layout import rnn_param_size
    rng = np.random.RandomState(5)
    data = rng.uniform(-1, 1, (T, N, D)).astype(np.float32)
    params = rng.uniform(-0.5, 0.5, (rnn_param_size("lstm", D, H, 1, True, 2),))
    h0, c0 = rng.uniform(-0.5, 0.5, (2, N, 2)), rng.uniform(-0.5, 0.5, (2, N, H))
    kwargs = dict(state_size=H, num_layers=1, mode="lstm", bidirectional=True,
                  projection_size=2, state_outputs=True)
    out = mx.nd.RNN(mx.nd.array(data), mx.nd.array(params), mx.nd.array(h0), mx.nd.array(c0),
                    mx.nd.array(LENGTHS), use_sequence_length=True, **kwargs)
    assert out[0].shape == (T, N, 4) and out[1].shape == (2, N, 2)
    for n, length in enumerate(LENGTHS.astype(int)):
        alone = mx.nd.RNN(mx.nd.array(data[:length, n:n + 1]), mx.nd.array(params),
                          mx.nd.array(h0[:, n:n + 1]), mx.nd.array(c0[:, n:n + 1]), **kwargs)
        np.testing.assert_allclose(out[0].asnumpy()[:length, n], alone[0].asnumpy()[:, 0],
                                   atol=1e-5)
        for whole, part in zip(out[1:], alone[1:]):
            np.testing.assert_allclose(whole.asnumpy()[:, n], part.asnumpy()[:, 0], atol=1e-5)


def test_full_lengths_give_the_op_without_lengths():
    rng = np.random.RandomState(4)
    values = {"x": rng.uniform(-1, 1, (T, N, D)),
              "p": rng.uniform(-0.5, 0.5, (_param_count("gru", 1, 2),)),
              "h": rng.uniform(-0.5, 0.5, (2, N, H))}
    heads = [rng.uniform(-1, 1, (T, N, 2 * H)), rng.uniform(-1, 1, (2, N, H))]
    with_lengths = _run(mx.cpu(), "gru", 1, 2, values, heads, np.full(N, T, np.float32))
    without = _run(mx.cpu(), "gru", 1, 2, values, heads)
    for got, want in zip(with_lengths[0], without[0]):
        np.testing.assert_allclose(got, want, atol=1e-6)
    for name in ("x", "p", "h"):
        np.testing.assert_allclose(with_lengths[1][name], without[1][name], atol=1e-6)


@pytest.mark.parametrize("lengths", [[4, 0, 3], [4, 5, 1]])
def test_lengths_outside_the_time_steps_are_refused(lengths):
    data = mx.nd.ones((T, N, D))
    params = mx.nd.ones((_param_count("rnn_tanh", 1, 1),))
    with pytest.raises(mx.MXNetError, match=r"sequence_length holds \[(0|5)\], outside \[1, 4\]"):
        mx.nd.RNN(data, params, mx.nd.zeros((1, N, H)), sequence_length=mx.nd.array(lengths),
                  state_size=H, num_layers=1, mode="rnn_tanh", use_sequence_length=True)
