"""A Monitor scenario run identically under MXNet 1.9.1 and minimod (`run(mx, monitor_all)`)."""
import numpy as np


def build(mx):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn")
    net = mx.sym.Activation(net, act_type="relu", name="relu")
    return mx.sym.FullyConnected(net, num_hidden=2, name="head")


def run(mx, monitor_all=False, pattern=".*", sort=False, batches=3, interval=2):
    """toc() of every batch: [[(step, name, text), ...] per batch]."""
    sym = build(mx)
    exe = sym.simple_bind(mx.cpu(), data=(2, 3))
    rng = np.random.RandomState(3)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        arr[:] = rng.uniform(0.1, 1.0, size=arr.shape).astype(np.float32)
    mon = mx.mon.Monitor(interval, pattern=pattern, sort=sort, monitor_all=monitor_all)
    mon.install(exe)
    out = []
    for _ in range(batches):
        mon.tic()
        exe.forward(is_train=False)
        out.append([list(item) for item in mon.toc()])
    return out


def scenarios(mx):
    # "all": every node's inputs too, named as MXNet names them ("relu_input0" for an op
    # MXNet registers without input names, a variable reported under its own name and then
    # as the node's input); generated with MXNET_SUBGRAPH_BACKEND=NONE, since oneDNN's
    # fused layers would be reported under other names
    return {"default": run(mx), "sorted": run(mx, sort=True, batches=1),
            "pattern": run(mx, pattern="fc.*|bn_moving.*", interval=1, batches=2),
            "all": run(mx, monitor_all=True, batches=1)}
