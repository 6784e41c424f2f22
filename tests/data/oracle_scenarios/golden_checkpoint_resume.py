"""MXNet's own checkpoints (tests/data/golden/toy*-0001.*, with pickled .states) are loaded with
Module.load(..., load_optimizer_states=True) and trained further; every number must agree."""
import os

import numpy as np

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden")


def _continue(mx, prefix, ctx, kvstore, optimizer, params, steps=3):
    mod = mx.mod.Module.load(os.path.join(GOLDEN, prefix), 1, load_optimizer_states=True,
                             context=ctx)
    mod.bind(data_shapes=[("data", (6, 5))], label_shapes=[("softmax_label", (6,))])
    mod.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=params)
    rng = np.random.RandomState(4)
    for _ in range(steps):
        x = rng.uniform(-1, 1, (6, 5)).astype(np.float32)
        y = rng.randint(0, 3, (6,)).astype(np.float32)
        mod.forward_backward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]))
        mod.update()
    arg, aux = mod.get_params()
    out = {"%s_arg_%s" % (prefix, k): v.asnumpy() for k, v in arg.items()}
    out.update({"%s_aux_%s" % (prefix, k): v.asnumpy() for k, v in aux.items()})
    return out


def run(mx):
    out = _continue(mx, "toy", [mx.cpu(0), mx.cpu(1)], "local", "sgd",
                    {"learning_rate": 0.1, "momentum": 0.9})
    adam = _continue(mx, "toy1", mx.cpu(), "local", "adam", {"learning_rate": 0.01})
    # fc1 feeds BatchNorm, so fc1_bias's gradient is zero up to rounding; Adam divides that
    # rounding noise by its own square root, so the bias (and the moving mean it shifts) are
    # noise in both engines. Everything else must agree.
    out.update({k: v for k, v in adam.items()
                if not k.endswith(("fc1_bias", "bn1_moving_mean"))})
    return out
