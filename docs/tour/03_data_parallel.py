"""Tour step 3: one batch split over several devices.

    python docs/tour/03_data_parallel.py

cpu(0), cpu(1), cpu(2) are separate devices with separate arrays, so this runs anywhere.
"""
import numpy as np

import minimod as mx
from minimod.executor.batches import split_batch

# 1. The split is a pure function of the batch size and the work loads.
print("split_batch(10, [1, 1, 1]) =", split_batch(10, [1, 1, 1]))
print("split_batch(10, [2, 1, 1]) =", split_batch(10, [2, 1, 1]))

# 2. A Module over three devices binds one executor per device, each for its slice.
data = mx.sym.Variable("data")
net = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
net = mx.sym.SoftmaxOutput(net, name="softmax")
contexts = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
mod = mx.mod.Module(net, context=contexts, work_load_list=[2, 1, 1])
mod.bind(data_shapes=[("data", (10, 4))], label_shapes=[("softmax_label", (10,))])
mod.init_params(mx.init.Constant(0.1))
group = mod._exec_group
for ctx, piece, executor in zip(contexts, group.slices, group.execs):
    print("%s takes samples %d..%d: data %s, its own fc_weight %s" % (
        ctx, piece.start, piece.stop - 1, executor.arg_dict["data"].shape,
        executor.arg_dict["fc_weight"].shape))

# 3. Forward scatters the batch, each device runs its plan, the outputs are gathered in order.
x = np.arange(40, dtype=np.float32).reshape(10, 4) / 40
batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.zeros((10,))])
mod.forward(batch, is_train=True)
merged = mod.get_outputs()[0].asnumpy()
single = mx.mod.Module(net, context=mx.cpu())
single.bind(data_shapes=[("data", (10, 4))], label_shapes=[("softmax_label", (10,))])
single.init_params(mx.init.Constant(0.1))
single.forward(batch, is_train=False)
print("merged outputs", merged.shape, "equal one device's:",
      bool(np.allclose(merged, single.get_outputs()[0].asnumpy())))

# 4. Backward leaves one gradient per device; each is the sum over that device's slice.
mod.backward()
grads = [g.asnumpy() for g in group.grad_arrays[group.param_names.index("fc_bias")]]
for ctx, grad in zip(contexts, grads):
    print("%s fc_bias grad %s" % (ctx, np.round(grad, 4).tolist()))
print("sum over devices %s" % np.round(sum(grads), 4).tolist())
