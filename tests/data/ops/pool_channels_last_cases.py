"""Pooling with channels-last layouts (NWC, NHWC, NDHWC), every pool type, for both engines:
`run(mx)` gives each case's output and input gradient under a seeded head gradient (MXNet
1.9.1 under gen_pool_channels_last.py, minimod under tests/ops/test_pooling_channels_last.py).
"""
import numpy as np

CASES = [
    ((2, 7, 3), "NWC", dict(kernel=(3,), stride=(2,), pad=(1,))),
    ((2, 5, 6, 3), "NHWC", dict(kernel=(2, 2), stride=(1, 2))),
    ((2, 5, 6, 3), "NHWC", dict(kernel=(2, 2), stride=(2, 2))),
    ((2, 4, 5, 6, 3), "NDHWC", dict(kernel=(2, 2, 2))),
    ((2, 5, 6, 3), "NHWC", dict(global_pool=True, kernel=(1, 1))),
    ((2, 5, 6, 3), "NHWC", dict(kernel=(3, 3), pad=(1, 1), count_include_pad=False,
                               pooling_convention="full")),
]
POOL_TYPES = ("max", "avg", "sum", "lp")


def run(mx, ctx=None):
    ctx = ctx or mx.cpu()
    rng = np.random.RandomState(0)
    out = {}
    for i, (shape, layout, kwargs) in enumerate(CASES):
        x = rng.rand(*shape).astype(np.float32)
        for pool_type in POOL_TYPES:
            extra = dict(p_value=2) if pool_type == "lp" else {}
            net = mx.sym.Pooling(mx.sym.var("x"), pool_type=pool_type, layout=layout,
                                 **kwargs, **extra)
            exe = net.simple_bind(ctx, x=shape)
            exe.arg_dict["x"][:] = x
            y = exe.forward(is_train=True)[0]
            exe.backward(mx.nd.array(rng.rand(*y.shape).astype(np.float32), ctx=ctx))
            out["%d/%s/out" % (i, pool_type)] = y.asnumpy()
            out["%d/%s/grad" % (i, pool_type)] = exe.grad_dict["x"].asnumpy()
    return out
