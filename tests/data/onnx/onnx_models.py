"""Models whose ONNX export is checked against MXNet 1.9.1's own forward pass. Each builder
takes the `mx` module (MXNet in gen_onnx_golden.py, minimod in tests/onnx/test_export_api.py)
and returns (symbol, data shapes); the generator stores the symbol JSON, the parameters and
MXNet's outputs for is_train=False."""


def lenet_bn(mx):
    """Convolutions with BatchNorm, 'full' max pooling, average pooling, dropout, softmax."""
    s = mx.sym
    x = s.Convolution(s.var("data"), kernel=(5, 5), num_filter=8, pad=(2, 2), name="conv1")
    x = s.Activation(s.BatchNorm(x, name="bn1"), act_type="relu")
    x = s.Pooling(x, kernel=(3, 3), stride=(2, 2), pooling_convention="full", name="pool1")
    x = s.Convolution(x, kernel=(3, 3), num_filter=12, name="conv2")
    x = s.BatchNorm(x, fix_gamma=False, name="bn2")
    x = s.Pooling(s.LeakyReLU(x, slope=0.1), kernel=(2, 2), stride=(2, 2), pool_type="avg")
    x = s.Dropout(s.FullyConnected(s.Flatten(x), num_hidden=32, name="fc1"), p=0.5)
    x = s.FullyConnected(s.Activation(x, act_type="tanh"), num_hidden=10, name="fc2")
    return s.SoftmaxOutput(x, name="softmax"), {"data": (4, 3, 16, 16)}


def residual(mx):
    """A residual block (BatchNorm, elementwise add), global pooling, softmax output."""
    s = mx.sym
    data = s.var("data")
    stem = s.Convolution(data, kernel=(3, 3), num_filter=8, pad=(1, 1), no_bias=True,
                         name="stem")
    y = s.Activation(s.BatchNorm(stem, name="bn_a"), act_type="relu")
    y = s.Convolution(y, kernel=(3, 3), num_filter=8, pad=(1, 1), no_bias=True, name="conv_a")
    y = s.BatchNorm(y, name="bn_b")
    y = s.Activation(y + stem, act_type="relu")
    y = s.Pooling(y, kernel=(7, 7), global_pool=True, pool_type="avg")
    y = s.FullyConnected(s.Flatten(y), num_hidden=5, name="fc")
    return s.SoftmaxOutput(y, name="softmax"), {"data": (2, 3, 10, 10)}


def lstm_cells(mx):
    """An LSTM LM unrolled with mx.rnn.LSTMCell over 6 steps (the graph of the classic
    bucketing scripts), then a decoder and a softmax over every step."""
    s = mx.sym
    embed = s.Embedding(s.var("data"), input_dim=20, output_dim=8, name="embed")
    cell = mx.rnn.SequentialRNNCell()
    cell.add(mx.rnn.LSTMCell(num_hidden=12, prefix="l0_"))
    cell.add(mx.rnn.LSTMCell(num_hidden=12, prefix="l1_"))
    outputs, _ = cell.unroll(6, inputs=embed, merge_outputs=True, layout="NTC")
    pred = s.FullyConnected(s.Reshape(outputs, shape=(-1, 12)), num_hidden=20, name="pred")
    return s.SoftmaxOutput(pred, name="softmax"), {"data": (3, 6)}


def fused_lstm(mx):
    """The same LM with the fused RNN op (two bidirectional LSTM layers), its begin states
    taken from parameters, its final states as extra outputs."""
    s = mx.sym
    embed = s.Embedding(s.var("data"), input_dim=20, output_dim=8, name="embed")
    rnn = s.RNN(s.transpose(embed, axes=(1, 0, 2)), s.var("rnn_parameters"),
                s.var("rnn_state"), s.var("rnn_state_cell"), state_size=12, num_layers=2,
                bidirectional=True, mode="lstm", state_outputs=True, name="rnn")
    pred = s.FullyConnected(s.Reshape(rnn[0], shape=(-1, 24)), num_hidden=20, name="pred")
    heads = [s.softmax(pred, name="probs"), rnn[1], rnn[2]]
    return s.Group(heads), {"data": (3, 6)}


MODELS = {"lenet_bn": lenet_bn, "residual": residual, "lstm_cells": lstm_cells,
          "fused_lstm": fused_lstm}
