"""LeNet at its full size (1x28x28, conv 5x5x20, max pool, conv 5x5x50, max pool, fc 500,
fc 10, tanh): minimod fuses both tanh layers into their pooling and keeps every array from
conv1's output to fc2's input batch-last, with conv1's 24-wide output summed in the batch-last
order. Outputs, input gradients, the convolutions' gradients and an SGD-momentum
trajectory of three steps, then inference."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import data, sgd_trajectory  # noqa: E402


def _lenet(mx):
    net = mx.sym.Variable("data")
    for i, filters in ((1, 20), (2, 50)):
        net = mx.sym.Convolution(net, kernel=(5, 5), num_filter=filters, name="conv%d" % i)
        net = mx.sym.Activation(net, act_type="tanh", name="tanh%d" % i)
        net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2),
                             name="pool%d" % i)
    net = mx.sym.FullyConnected(mx.sym.Flatten(net), num_hidden=500, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh3")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def run(mx):
    x, y = data(40, (1, 28, 28), 10, seed=5)
    return sgd_trajectory(mx, _lenet(mx), x, y, 10,
                          ("conv1_weight", "conv1_bias", "conv2_weight", "conv2_bias"))
