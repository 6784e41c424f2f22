"""Symbols whose print_summary tables are compared with MXNet 1.9.1's (`build(mx)` per case)."""


def mlp(mx):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=64, name="fc1")
    net = mx.sym.BatchNorm(net, name="bn1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=10, no_bias=True, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax"), {"data": (32, 100)}


def convnet(mx):
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=16, pad=(1, 1), name="conv1")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    net = mx.sym.Convolution(net, kernel=(3, 3), num_filter=32, num_group=4, no_bias=True,
                             name="conv2")
    net = mx.sym.Flatten(net, name="flat")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax"), {"data": (8, 3, 16, 16)}


def embed(mx):
    data = mx.sym.Variable("data")
    net = mx.sym.Embedding(data, input_dim=50, output_dim=8, name="embed")
    net = mx.sym.FullyConnected(net, num_hidden=6, flatten=False, name="proj")
    a = mx.sym.Activation(net, act_type="tanh", name="tanh")
    b = mx.sym.Activation(net, act_type="sigmoid", name="sig")
    net = a + b
    return mx.sym.LinearRegressionOutput(net, name="out"), {"data": (4, 5)}


def lenet(mx):
    """LeNet as in MXNet's tutorials: two tanh convolution + max-pool stages, two dense layers."""
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(5, 5), num_filter=20, name="conv1")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh1")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    net = mx.sym.Convolution(net, kernel=(5, 5), num_filter=50, name="conv2")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh2")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    net = mx.sym.Flatten(net, name="flatten")
    net = mx.sym.FullyConnected(net, num_hidden=500, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh3")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax"), {"data": (64, 1, 28, 28)}


def mlp3(mx):
    """The MNIST MLP of MXNet's tutorials: 784-128-64-10 with relu."""
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=128, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=64, name="fc2")
    net = mx.sym.Activation(net, act_type="relu", name="relu2")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc3")
    return mx.sym.SoftmaxOutput(net, name="softmax"), {"data": (100, 784)}


def mlp_noshape(mx):
    return mlp(mx)[0], None


CASES = {"mlp": (mlp, {}), "convnet": (convnet, {}), "lenet": (lenet, {}), "mlp3": (mlp3, {}),
         "embed": (embed, {"line_length": 100}),
         "mlp_noshape": (mlp_noshape, {"positions": [30, 60, 80, 100], "line_length": 100})}
