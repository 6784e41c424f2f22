"""Graphs built with `mx.rnn` cells, shared by the MXNet golden generator and minimod's tests.

Each builder takes the framework module (`mxnet` or `minimod`) and returns
(symbol, input shapes, numbers): `numbers` is False where the graph draws random numbers
(dropout) so that only its structure can be compared. Builders run inside a fresh
`mx.name.NameManager()` in both engines.
"""

N, T, C, H = 3, 4, 5, 6


def _group(mx, outputs, states):
    """outputs then states, each symbol once: MXNet uses only the last head gradient of an
    output listed twice, a corner the cell tests should not depend on."""
    outs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    flat = []
    stack = list(states)
    while stack:
        s = stack.pop(0)
        if isinstance(s, (list, tuple)):
            stack = list(s) + stack
        else:
            flat.append(s)
    seen = set()
    unique = []
    for s in outs + flat:
        key = s.list_outputs()[0]
        if key not in seen:
            seen.add(key)
            unique.append(s)
    return mx.sym.Group(unique)


def _data_shape(layout):
    return {"data": (N, T, C) if layout == "NTC" else (T, N, C)}


def lstm_ntc_merge(mx):
    cell = mx.rnn.LSTMCell(H, prefix="lstm_")
    out, states = cell.unroll(T, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    return _group(mx, out, states), _data_shape("NTC"), True


def lstm_tnc_list(mx):
    cell = mx.rnn.LSTMCell(H, prefix="lstm_", forget_bias=0.5)
    out, states = cell.unroll(T, mx.sym.Variable("data"), layout="TNC", merge_outputs=False)
    return _group(mx, out, states), _data_shape("TNC"), True


def lstm_list_inputs(mx):
    cell = mx.rnn.LSTMCell(H)
    steps = [mx.sym.Variable("x%d" % t) for t in range(T)]
    out, states = cell.unroll(T, steps, merge_outputs=None)
    return _group(mx, out, states), {"x%d" % t: (N, C) for t in range(T)}, True


def gru_ntc_merge(mx):
    cell = mx.rnn.GRUCell(H)
    out, states = cell.unroll(T, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    return _group(mx, out, states), _data_shape("NTC"), True


def gru_tnc_list(mx):
    cell = mx.rnn.GRUCell(H, prefix="g_")
    out, states = cell.unroll(T, mx.sym.Variable("data"), layout="TNC", merge_outputs=False)
    return _group(mx, out, states), _data_shape("TNC"), True


def rnn_tanh_merge(mx):
    cell = mx.rnn.RNNCell(H)
    out, states = cell.unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    return _group(mx, out, states), _data_shape("NTC"), True


def rnn_relu_list(mx):
    cell = mx.rnn.RNNCell(H, activation="relu", prefix="r_")
    out, states = cell.unroll(T, mx.sym.Variable("data"), layout="TNC", merge_outputs=False)
    return _group(mx, out, states), _data_shape("TNC"), True


def stack_residual(mx):
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(C, prefix="l0_"))
    stack.add(mx.rnn.ResidualCell(mx.rnn.LSTMCell(C, prefix="l1_")))
    stack.add(mx.rnn.GRUCell(H, prefix="l2_"))
    out, states = stack.unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    return _group(mx, out, states), _data_shape("NTC"), True


def stack_residual_list(mx):
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.RNNCell(C, prefix="a_"))
    stack.add(mx.rnn.ResidualCell(mx.rnn.GRUCell(C, prefix="b_")))
    out, states = stack.unroll(T, mx.sym.Variable("data"), layout="TNC", merge_outputs=False)
    return _group(mx, out, states), _data_shape("TNC"), True


def stack_dropout(mx):
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(H, prefix="l0_"))
    stack.add(mx.rnn.DropoutCell(0.5, prefix="d0_"))
    stack.add(mx.rnn.LSTMCell(H, prefix="l1_"))
    stack.add(mx.rnn.DropoutCell(0.25))
    out, states = stack.unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    return _group(mx, out, states), _data_shape("NTC"), False


def stack_step(mx):
    """A SequentialRNNCell stepped by hand (its __call__), with explicit begin states."""
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(H, prefix="s0_"))
    stack.add(mx.rnn.RNNCell(H, prefix="s1_"))
    states = stack.begin_state()
    outs = []
    for t in range(2):
        out, states = stack(mx.sym.Variable("x%d" % t), states)
        outs.append(out)
    return _group(mx, outs, states), {"x0": (N, C), "x1": (N, C)}, True


def bidirectional_merge(mx):
    cell = mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(H, prefix="fw_"),
                                    mx.rnn.LSTMCell(H, prefix="bw_"))
    out, states = cell.unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    return _group(mx, out, states), _data_shape("NTC"), True


def bidirectional_list(mx):
    cell = mx.rnn.BidirectionalCell(mx.rnn.GRUCell(H, prefix="fw_"),
                                    mx.rnn.GRUCell(H, prefix="bw_"), output_prefix="bio_")
    out, states = cell.unroll(T, mx.sym.Variable("data"), layout="TNC", merge_outputs=False)
    return _group(mx, out, states), _data_shape("TNC"), True


def bidirectional_none(mx):
    cell = mx.rnn.BidirectionalCell(mx.rnn.RNNCell(H, prefix="fw_"),
                                    mx.rnn.RNNCell(H, prefix="bw_"))
    out, states = cell.unroll(T, mx.sym.Variable("data"), merge_outputs=None)
    return _group(mx, out, states), _data_shape("NTC"), True


def zoneout(mx):
    cell = mx.rnn.ZoneoutCell(mx.rnn.LSTMCell(H, prefix="z_"), zoneout_outputs=0.3,
                              zoneout_states=0.2)
    out, states = cell.unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    return _group(mx, out, states), _data_shape("NTC"), False


def _fused(mx, mode, layout, bidirectional=True, layers=2, next_state=False, merge=True,
           prefix=None):
    cell = mx.rnn.FusedRNNCell(H, num_layers=layers, mode=mode, bidirectional=bidirectional,
                               get_next_state=next_state, prefix=prefix)
    out, states = cell.unroll(T, mx.sym.Variable("data"), layout=layout, merge_outputs=merge)
    return _group(mx, out, states), _data_shape(layout), True


def fused_lstm_bi2_tnc(mx):
    return _fused(mx, "lstm", "TNC", next_state=True)


def fused_lstm_bi2_ntc(mx):
    return _fused(mx, "lstm", "NTC")


def fused_gru_bi2_tnc(mx):
    return _fused(mx, "gru", "TNC", next_state=True)


def fused_gru_uni1_ntc_list(mx):
    return _fused(mx, "gru", "NTC", bidirectional=False, layers=1, merge=False)


def fused_rnn_tanh_bi2(mx):
    return _fused(mx, "rnn_tanh", "TNC", next_state=True, prefix="rt_")


def fused_rnn_relu_uni3(mx):
    return _fused(mx, "rnn_relu", "TNC", bidirectional=False, layers=3, next_state=True)


def fused_lstm_unfused(mx):
    cell = mx.rnn.FusedRNNCell(H, num_layers=2, mode="lstm", bidirectional=True, dropout=0.0)
    out, states = cell.unfuse().unroll(T, mx.sym.Variable("data"), layout="TNC",
                                       merge_outputs=True)
    return _group(mx, out, states), _data_shape("TNC"), True


def fused_gru_unfused_dropout(mx):
    cell = mx.rnn.FusedRNNCell(H, num_layers=2, mode="gru", dropout=0.5)
    out, states = cell.unfuse().unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    return _group(mx, out, states), _data_shape("NTC"), False


def rnn_op_lstm_clip(mx):
    """Structure only: MXNet 1.9.1's CPU kernel ignores the lstm_state_clip_* attributes
    (verified: same numbers as without them), minimod clips as documented (cuDNN's way)."""
    data = mx.sym.Variable("data")
    out = mx.sym.RNN(data, state_size=H, num_layers=1, mode="lstm", state_outputs=True,
                     lstm_state_clip_min=-0.2, lstm_state_clip_max=0.3, name="clip")
    return out, {"data": (T, N, C)}, False


CASES = {f.__name__: f for f in [
    lstm_ntc_merge, lstm_tnc_list, lstm_list_inputs, gru_ntc_merge, gru_tnc_list,
    rnn_tanh_merge, rnn_relu_list, stack_residual, stack_residual_list, stack_dropout,
    stack_step, bidirectional_merge, bidirectional_list, bidirectional_none, zoneout,
    fused_lstm_bi2_tnc, fused_lstm_bi2_ntc, fused_gru_bi2_tnc, fused_gru_uni1_ntc_list,
    fused_rnn_tanh_bi2, fused_rnn_relu_uni3, fused_lstm_unfused, fused_gru_unfused_dropout,
    rnn_op_lstm_clip,
]}


def build(mx, name):
    with mx.name.NameManager():
        return CASES[name](mx)


def arg_values(sym, arg_shapes, seed):
    """Deterministic argument values: uniform(-0.5, 0.5) drawn in list_arguments order."""
    import numpy as np
    rng = np.random.RandomState(seed)
    return {n: rng.uniform(-0.5, 0.5, s).astype("float32")
            for n, s in zip(sym.list_arguments(), arg_shapes)}


def head_grads(out_shapes, seed):
    import numpy as np
    rng = np.random.RandomState(seed + 1)
    return [rng.uniform(-1, 1, s).astype("float32") for s in out_shapes]
