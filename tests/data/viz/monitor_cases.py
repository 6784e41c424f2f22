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


def op_cases(mx):
    """Single-node graphs of operators added later, monitored with monitor_all: MXNet names
    the inputs of some "input0", of others by their slot."""
    v = mx.sym.var
    return [
        (mx.sym.L2Normalization(v("a"), name="op"), dict(a=(2, 3, 4))),
        (mx.sym.GroupNorm(v("a"), v("b"), v("c"), num_groups=1, name="op"),
         dict(a=(2, 3, 4), b=(1,), c=(1,))),
        (mx.sym.UpSampling(v("a"), scale=2, sample_type="nearest", num_args=1, name="op"),
         dict(a=(1, 2, 2, 2))),
        (mx.sym.UpSampling(v("a"), v("b"), scale=2, sample_type="bilinear", num_filter=2,
                           name="op"), dict(a=(1, 2, 2, 2), b=(2, 1, 4, 4))),
        (mx.sym.Crop(v("a"), v("b"), num_args=2, name="op"), dict(a=(1, 1, 4, 4), b=(1, 1, 2, 2))),
        (mx.sym.slice_like(v("a"), v("b"), name="op"), dict(a=(3, 4), b=(2, 2))),
        (mx.sym.smooth_l1(v("a"), name="op"), dict(a=(3, 4))),
        (mx.sym.hard_sigmoid(v("a"), name="op"), dict(a=(3, 4))),
        (mx.sym.softmin(v("a"), name="op"), dict(a=(3, 4))),
        # MXNet cannot bind sort with its default axis=-1 and gradients; the hidden indices
        # (op_output1) are left out, their storage differs
        (mx.sym.sort(v("a"), axis=1, name="op"), dict(a=(3, 4)), "(?!op_output1$)"),
        (mx.sym.argsort(v("a"), name="op"), dict(a=(3, 4))),
        # MXNet's norm of an int64 array is off ([3, 4] gives 4): shape_array's output is left out
        (mx.sym.shape_array(v("a"), name="op"), dict(a=(3, 4)), "(?!op_output$)"),
        (mx.sym.size_array(v("a"), name="op"), dict(a=(3, 4))),
        (mx.sym.SVMOutput(v("a"), v("b"), name="op"), dict(a=(3, 4), b=(3,))),
        (mx.sym.diag(v("a"), name="op"), dict(a=(3, 4))),
        (mx.sym.depth_to_space(v("a"), block_size=2, name="op"), dict(a=(1, 4, 2, 2))),
        (mx.sym.space_to_depth(v("a"), block_size=2, name="op"), dict(a=(1, 1, 4, 4))),
        (mx.sym.moments(v("a"), axes=(1,), name="op"), dict(a=(3, 4))),
        # the values drawn below (0 to 3) are valid indices of these shapes
        (mx.sym.gather_nd(v("a"), v("b"), name="op"), dict(a=(4, 4), b=(2, 2))),
        (mx.sym.scatter_nd(v("a"), v("b"), shape=(4, 4), name="op"), dict(a=(2,), b=(2, 2))),
        # maxidx is int32: MXNet's norm of integers is off (see shape_array); left out
        (mx.sym.ROIPooling(v("a"), v("b"), pooled_size=(2, 2), spatial_scale=1.0, name="op"),
         dict(a=(4, 1, 4, 4), b=(2, 5)), "(?!op_maxidx$)"),
    ]


def run_ops(mx):
    """toc() of one training forward per `op_cases` graph, as one batch each."""
    out = []
    rng = np.random.RandomState(5)
    for sym, shapes, *skip in op_cases(mx):
        exe = sym.simple_bind(mx.cpu(), **shapes)
        for name, arr in exe.arg_dict.items():
            arr[:] = rng.uniform(0.0, 3.0, size=arr.shape).astype(np.float32).round()
        mon = mx.mon.Monitor(1, pattern="".join(skip) + ".*", monitor_all=True)
        mon.install(exe)
        mon.tic()
        exe.forward(is_train=True)
        out.append([list(item) for item in mon.toc()])
    return out


def scenarios(mx):
    # "all": every node's inputs too, named as MXNet names them ("relu_input0" for an op
    # MXNet registers without input names, a variable reported under its own name and then
    # as the node's input); generated with MXNET_SUBGRAPH_BACKEND=NONE, since oneDNN's
    # fused layers would be reported under other names
    return {"default": run(mx), "sorted": run(mx, sort=True, batches=1),
            "pattern": run(mx, pattern="fc.*|bn_moving.*", interval=1, batches=2),
            "all": run(mx, monitor_all=True, batches=1), "added_ops": run_ops(mx)}
