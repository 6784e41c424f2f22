"""A conv + BatchNorm network on two devices with kvstore local, device and None."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import batch, conv_bn, data, det_params, params_out, to_nd  # noqa: E402


def run(mx):
    out = {}
    x, y = data(40, (2, 6, 6), 5, seed=11)
    for tag, ctx, kv in [("one", [mx.cpu(0)], "local"),
                         ("two_local", [mx.cpu(0), mx.cpu(1)], "local"),
                         ("two_device", [mx.cpu(0), mx.cpu(1)], "device"),
                         ("two_none", [mx.cpu(0), mx.cpu(1)], None)]:
        with mx.name.NameManager():
            sym = conv_bn(mx)
        args, auxs = det_params(sym, data=(8, 2, 6, 6), softmax_label=(8,))
        mod = mx.mod.Module(sym, context=ctx)
        mod.bind(data_shapes=[("data", (8, 2, 6, 6))], label_shapes=[("softmax_label", (8,))])
        mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
        mod.init_optimizer(kvstore=kv, optimizer="sgd",
                           optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
        for i in range(4):
            mod.forward_backward(batch(mx, x, y, i, 8))
            mod.update()
        out["%s_out" % tag] = mod.get_outputs()[0].asnumpy()
        out.update(params_out(mod, tag))
        mod.forward(batch(mx, x, y, 4, 8), is_train=False)
        out["%s_eval" % tag] = mod.get_outputs()[0].asnumpy()
    return out
