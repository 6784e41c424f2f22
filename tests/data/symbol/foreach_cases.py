"""Graphs built with `contrib.foreach`, written once for both libraries: each builder takes
the `mx` module (MXNet 1.9.1 in gen_foreach_golden.py, minimod in
tests/symbol/test_foreach.py) and returns (symbol, argument shapes)."""


def rnn(mx):
    """A tanh RNN over 5 steps: the body reads a weight from outside."""
    data, h0, w = mx.sym.var("data"), mx.sym.var("h0"), mx.sym.var("w")

    def step(x, states):
        h = mx.sym.tanh(mx.sym.FullyConnected(mx.sym.concat(x, states[0], dim=1), weight=w,
                                              num_hidden=4, no_bias=True, name="fc"))
        return h * 2, [h]
    outs, states = mx.sym.contrib.foreach(step, data, [h0])
    return mx.sym.Group([outs] + states), dict(data=(5, 3, 2), h0=(3, 4))


def nested_lists(mx):
    """Two data arrays, nested states and outputs, and a value computed outside the loop
    (cut into a variable of the body)."""
    x, y = mx.sym.var("x"), mx.sym.var("y")
    s1, s2 = mx.sym.var("s1"), mx.sym.var("s2")
    scale = mx.sym.exp(mx.sym.var("k"))
    bias = mx.sym.var("bias")

    def step(d, states):
        a = mx.sym.broadcast_mul(d[0], scale) + states[0]
        b = mx.sym.sigmoid(d[1] * states[1][0]) + bias
        return [a, [b * 3]], [a, [b]]
    outs, states = mx.sym.contrib.foreach(step, [x, y], [s1, [s2]])
    group = mx.sym.Group([outs[0], outs[1][0], states[0], states[1][0]])
    return group, dict(x=(4, 2, 3), y=(4, 2, 3), s1=(2, 3), s2=(2, 3), k=(1, 3), bias=(2, 3))


def passthrough(mx):
    """Outputs that are the body's own inputs (the step's data, an unchanged state): MXNet
    1.9.1 runs its forward but cannot bind it for gradients (its storage-type inference fails
    on the identity those outputs go through), so the golden file has its forward only."""
    data, s, c = mx.sym.var("data"), mx.sym.var("s"), mx.sym.var("c")

    def step(x, states):
        return [x, states[1]], [states[0] + x, states[1]]
    outs, states = mx.sym.contrib.foreach(step, data, [s, c])
    return mx.sym.Group(outs + states), dict(data=(3, 2, 2), s=(2, 2), c=(2, 2))


def nested_loops(mx):
    """A loop in a loop: the inner one runs over the rows of each outer step."""
    data, acc = mx.sym.var("data"), mx.sym.var("acc")
    w = mx.sym.var("w")

    def inner(row, states):
        h = mx.sym.tanh(row * w + states[0])
        return h, [h]

    def outer(x, states):
        rows, last = mx.sym.contrib.foreach(inner, x, [states[0]])
        return mx.sym.sum(rows, axis=0), [last[0] * 0.5]
    outs, states = mx.sym.contrib.foreach(outer, data, [acc])
    return mx.sym.Group([outs] + states), dict(data=(3, 2, 4), acc=(4,), w=(4,))


CASES = {"rnn": rnn, "nested_lists": nested_lists, "passthrough": passthrough,
         "nested_loops": nested_loops}
FORWARD_ONLY = {"passthrough"}
#: gradients MXNet 1.9.1 gets wrong (finite differences agree with minimod's): where a value
#: inside the body has two readers (here the node b, read by `b * 3` and returned as a state)
MXNET_WRONG_GRADS = {"nested_lists": {"y", "s2", "bias"}}
