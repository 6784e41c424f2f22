"""The Executor API around a small conv net: grad_req per argument ('write', 'add' over two
backward calls, 'null'), head gradients, copy_params_from with extra params, output_dict,
reshape to a bigger batch (allow_up_sizing) and to a smaller one sharing memory, a second
executor bound with shared_exec, and the monitor's per-node statistics (its names, sorted)."""
import numpy as np


def _net(mx):
    data = mx.sym.Variable("data")
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=3, name="conv")
    act = mx.sym.Activation(conv, act_type="relu", name="relu")
    drop = mx.sym.Dropout(act, p=0.0, name="drop")  # no draws: the engines draw differently
    fc = mx.sym.FullyConnected(mx.sym.Flatten(drop), num_hidden=4, name="fc")
    return mx.sym.Group([mx.sym.tanh(fc, name="out"), mx.sym.BlockGrad(conv, name="feat")])


def run(mx):
    out = {}
    rng = np.random.RandomState(41)
    sym = _net(mx)

    def arr(*shape):
        return mx.nd.array(rng.uniform(-1, 1, size=shape).astype(np.float32))

    params = {"conv_weight": arr(3, 2, 3, 3), "conv_bias": arr(3),
              "fc_weight": arr(4, 27), "fc_bias": arr(4)}
    exe = sym.simple_bind(mx.cpu(), data=(2, 2, 5, 5),
                          grad_req={"data": "write", "conv_weight": "add",
                                    "conv_bias": "null", "fc_weight": "write",
                                    "fc_bias": "add"})
    exe.copy_params_from(dict(params, unused=arr(2)), allow_extra_params=True)
    x = arr(2, 2, 5, 5)
    head = [arr(2, 4), mx.nd.zeros((2, 3, 3, 3))]
    for i in range(2):
        exe.forward(is_train=True, data=x)
        exe.backward(head)
        for name in ("data", "conv_weight", "fc_weight", "fc_bias"):
            out["grad%d_%s" % (i, name)] = exe.grad_dict[name].asnumpy()
    out["outputs"] = exe.output_dict["out_output"].asnumpy()
    out["output_names"] = ",".join(sorted(exe.output_dict))
    out["conv_bias_grad_is_none"] = float(exe.grad_dict["conv_bias"] is None)
    bigger = exe.reshape(allow_up_sizing=True, data=(5, 2, 5, 5))
    x5 = arr(5, 2, 5, 5)
    out["bigger"] = bigger.forward(is_train=False, data=x5)[0].asnumpy()
    smaller = exe.reshape(data=(1, 2, 5, 5))
    out["smaller"] = smaller.forward(is_train=False, data=x5[:1])[0].asnumpy()
    shared = sym.simple_bind(mx.cpu(), data=(1, 2, 5, 5), grad_req="null", shared_exec=exe)
    shared.copy_params_from(params)
    out["shared"] = shared.forward(data=x5[1:2])[0].asnumpy()
    stats = []

    def collect(name, array):
        stats.append((name, float(mx.nd.norm(array).asscalar())))

    # on the executor with gradients: MXNet's oneDNN build fuses layers of binds without
    # them and reports the fused names (docs/compatibility.md)
    mon = mx.mon.Monitor(1, stat_func=lambda a: mx.nd.norm(a), pattern=".*", sort=True)
    mon.install(exe)
    mon.tic()
    exe.forward(is_train=False, data=x)
    for _, name, value in mon.toc():
        if not name.endswith("_mask"):  # MXNet leaves Dropout's mask unwritten in inference
            collect(name, mx.nd.array(np.array([float(value)], np.float32)))
    out["monitor_names"] = ",".join(n for n, _ in stats)
    out["monitor_values"] = np.array([v for _, v in stats])
    return out
