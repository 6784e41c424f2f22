"""Tour step 1: a symbol becomes a plan, and the plan runs.

    python docs/tour/01_symbol_to_plan.py
"""
import numpy as np

import minimod as mx
from minimod.passes import fusion

# 1. A symbol is only a graph: nodes, their inputs, their attributes. Nothing is allocated.
data = mx.sym.Variable("data")
fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
act = mx.sym.Activation(fc, act_type="tanh", name="act")
loss = mx.sym.MakeLoss(mx.sym.sum(act * act, name="total"), name="loss")
print("arguments:", loss.list_arguments())
print("outputs:  ", loss.list_outputs())

# 2. Shape inference runs over the graph: the data shape decides the weight shapes.
arg_shapes, out_shapes, _ = loss.infer_shape(data=(4, 5))
for name, shape in zip(loss.list_arguments(), arg_shapes):
    print("  %-10s %s" % (name, shape))

# 3. Binding compiles the plan (inference, the rewrites, the gradient pass, memory planning)
#    and allocates it on one device. debug_str prints it: the rewrites that ran, then one line
#    per step, b<k> is the planned block a value lives in, ext an array the user owns
#    (arguments, their gradients).
executor = loss.simple_bind(mx.cpu(), data=(4, 5))
print(executor.debug_str(), end="")

# 4. Running the plan: forward walks the [fwd] steps, backward the [bwd] steps. The monitor
#    callback sees every forward step's output as it is written.
executor.arg_dict["data"][:] = np.arange(20, dtype=np.float32).reshape(4, 5) / 20
executor.arg_dict["fc_weight"][:] = np.linspace(-0.5, 0.5, 15, dtype=np.float32).reshape(3, 5)
executor.arg_dict["fc_bias"][:] = 0.1


def show(name, array):
    print("  ran %-14s -> mean %+.4f" % (name, float(array.asnumpy().mean())))


executor.set_monitor_callback(show)
executor.forward(is_train=True)
executor.set_monitor_callback(None)
executor.backward()
print("loss = %.4f" % float(executor.outputs[0].asnumpy()[0]))
print("d loss / d fc_bias =", [round(float(v), 4) for v in executor.grad_dict["fc_bias"].asnumpy()])

# 5. The graph that runs is the graph after the compiler's rewrites. On a CPU a ReLU read only
#    by a max pooling fuses into it, and the edges between ops that work batch-last stay
#    batch-last; `with fusion(False):` binds without the fusion rewrite. Printed: the
#    Rewrites line and each forward step's node and op (the part of its line before ": ").
net = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=4, name="conv")
net = mx.sym.Activation(net, act_type="relu", name="relu")
net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
net = mx.sym.FullyConnected(mx.sym.Flatten(net, name="flat"), num_hidden=3, name="fc")
net = mx.sym.SoftmaxOutput(net, name="softmax")
for fused in (True, False):
    with fusion(fused):
        plan_text = net.simple_bind(mx.cpu(), data=(8, 1, 10, 10), grad_req="null").debug_str()
    print("with fusion(%s):" % fused)
    for line in plan_text.splitlines():
        if line.startswith("Rewrites"):
            print("  " + line)
        elif line.startswith("[fwd]"):
            print("  " + line.split(": ")[0])
