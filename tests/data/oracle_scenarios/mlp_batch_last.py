"""The benchmark's MLP at its full size (784-512-512-10, relu, batch 32): minimod stores every
array from fc1's output to fc3's input batch-last, (features, N), and runs the layers' GEMMs on
the transposed operands, its bias gradients as matrix-vector products. Outputs, input
gradients, every layer's gradients and an SGD-momentum trajectory of three steps, then
inference. Of the (512, k) weights and their gradients every 64th row is kept, and of the
input gradient every 4th sample, so that the golden file stays under a megabyte."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import data, sgd_trajectory  # noqa: E402


def _mlp(mx):
    net = mx.sym.Variable("data")
    for i, hidden in ((1, 512), (2, 512)):
        net = mx.sym.FullyConnected(net, num_hidden=hidden, name="fc%d" % i)
        net = mx.sym.Activation(net, act_type="relu", name="relu%d" % i)
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc3")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _cut(key, a):
    if key.startswith("dx"):
        return a[::4]
    return a[::64] if a.shape[0] >= 256 else a


def run(mx):
    x, y = data(128, (784,), 10, seed=7)
    grads = ["fc%d_%s" % (i, kind) for i in (1, 2, 3) for kind in ("bias", "weight")]
    return sgd_trajectory(mx, _mlp(mx), x, y, 32, grads, keep=_cut)
