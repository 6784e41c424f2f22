"""Tour step 5: the same computation imperatively, differentiated by the autograd tape.

    python docs/tour/05_autograd_tape.py
"""
import numpy as np

import minimod as mx
from minimod.ndarray import tape

# Step 1's loss, sum(tanh(fc(data))^2), as calls on NDArrays, with step 1's values.
data = mx.nd.array(np.arange(20, dtype=np.float32).reshape(4, 5) / 20)
weight = mx.nd.array(np.linspace(-0.5, 0.5, 15, dtype=np.float32).reshape(3, 5))
bias = mx.nd.full((3,), 0.1)
weight.attach_grad()  # variables: each gets a zeroed .grad buffer
bias.attach_grad()

# Inside record(), every call on an array that carries a gradient appends a node to the tape:
# the operator that ran and where each of its inputs came from.
with mx.autograd.record():
    fc = mx.nd.FullyConnected(data, weight, bias, num_hidden=3)
    act = mx.nd.tanh(fc)
    loss = (act * act).sum()

print("the tape, in recording order:")
for node in tape.reachable([loss._ag])[::-1]:
    sources = ["variable" if isinstance(p, tape.Leaf) else "constant" if p is None
               else "%s[%d]" % (p[0].name, p[1]) for p in node.parents]
    print("  %-16s <- %s" % (node.name, ", ".join(sources)))

# backward walks it in reverse, calling each op's own backward (the function a bound graph's
# _backward_<op> step runs), and writes the variables' gradients into their buffers.
loss.backward()
print("loss = %.4f" % loss.asscalar())
print("d loss / d fc_bias = [%s]" % ", ".join("%.4f" % v for v in bias.grad.asnumpy()))
print("the graph it recorded, as a symbol:", mx.autograd.get_symbol(loss).list_arguments())
