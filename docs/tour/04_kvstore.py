"""Tour step 4: the kvstore sums what the devices push and hands the result back.

    python docs/tour/04_kvstore.py
"""
import numpy as np

import minimod as mx

kv = mx.kv.create("local")
kv.init("fc_bias", mx.nd.zeros((2,)))

# each device pushes its own gradient; the store sums the list
grads = [mx.nd.array([1.0, 2.0], ctx=mx.cpu(k)) for k in range(3)]
kv.push("fc_bias", grads)
out = [mx.nd.zeros((2,), ctx=mx.cpu(k)) for k in range(3)]
kv.pull("fc_bias", out=out)
for array in out:
    print("pulled on %s: %s" % (array.context, array.asnumpy().tolist()))

# with an optimizer the store updates its copy of the weight once, then broadcasts it
kv = mx.kv.create("local")
kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, rescale_grad=1.0))
kv.init("fc_weight", mx.nd.ones((2,)))
weights = [mx.nd.ones((2,), ctx=mx.cpu(k)) for k in range(3)]
kv.push("fc_weight", [mx.nd.array([0.5, -1.0], ctx=mx.cpu(k)) for k in range(3)])
kv.pull("fc_weight", out=weights)
print("weight after one SGD step on the summed gradient:",
      [round(float(v), 4) for v in weights[0].asnumpy()], "(1 - 0.1 * 3 * g)")
print("every device holds the same weight:",
      all(np.array_equal(w.asnumpy(), weights[0].asnumpy()) for w in weights))
