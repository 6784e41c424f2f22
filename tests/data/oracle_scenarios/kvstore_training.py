"""Module training through kvstores beyond plain SGD: Adam, RMSProp and Ftrl updated on the
kvstore ('device', update_on_kvstore) and locally (update_on_kvstore=False) over three
devices with an uneven work load, 2-bit gradient compression through Module's
compression_params, a kvstore object passed in, and optimizer states saved on three
devices and loaded on two."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import batch, data, det_params, mlp, params_out, to_nd  # noqa: E402

CASES = [
    ("adam_kv", "adam", {"learning_rate": 0.01, "wd": 0.001}, "device", None),
    ("rmsprop_local", "rmsprop", {"learning_rate": 0.01, "centered": True}, "local_noupd",
     None),
    ("ftrl_kv", "ftrl", {"learning_rate": 0.1, "lamda1": 0.001}, "local", None),
    ("sgd_2bit", "sgd", {"learning_rate": 0.1, "momentum": 0.9}, "device",
     {"type": "2bit", "threshold": 0.05}),
]


def _module(mx, sym, ctx, args, auxs, **kwargs):
    mod = mx.mod.Module(sym, context=ctx, **kwargs)
    mod.bind(data_shapes=[("data", (9, 6))], label_shapes=[("softmax_label", (9,))])
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    return mod


def run(mx):
    out = {}
    x, y = data(54, (6,), 4, seed=43)
    ctx = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
    for tag, name, params, kv, compression in CASES:
        with mx.name.NameManager():
            sym = mlp(mx, hidden=(8,))
        args, auxs = det_params(sym, data=(9, 6), softmax_label=(9,))
        extra = {"compression_params": compression} if compression else {}
        mod = _module(mx, sym, ctx, args, auxs, work_load_list=[1, 1, 1], **extra)
        if kv == "local_noupd":  # MXNet's switch: sum on the store, update on every device
            os.environ["MXNET_UPDATE_ON_KVSTORE"] = "0"
            try:
                mod.init_optimizer(kvstore=mx.kv.create("local"), optimizer=name,
                                   optimizer_params=params)
            finally:
                del os.environ["MXNET_UPDATE_ON_KVSTORE"]
            out["%s/update_on_kvstore" % tag] = float(mod._update_on_kvstore)
        else:
            mod.init_optimizer(kvstore=kv, optimizer=name, optimizer_params=params)
        for i in range(4):
            mod.forward_backward(batch(mx, x, y, i, 9))
            mod.update()
        out.update(params_out(mod, tag))
    # optimizer states written by three devices, loaded on one, training on
    with mx.name.NameManager():
        sym = mlp(mx, hidden=(8,))
    args, auxs = det_params(sym, data=(9, 6), softmax_label=(9,))
    mod = _module(mx, sym, ctx, args, auxs)
    # SGD momentum: Adam would differ by design, MXNet's pickled states forgetting the update
    # counts that minimod's keep (docs/compatibility.md)
    sgd = {"learning_rate": 0.05, "momentum": 0.9, "wd": 0.01}
    mod.init_optimizer(kvstore="device", optimizer="sgd", optimizer_params=sgd)
    for i in range(2):
        mod.forward_backward(batch(mx, x, y, i, 9))
        mod.update()
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "kv")
        mod.save_checkpoint(prefix, 2, save_optimizer_states=True)
        # on two devices and a kvstore: on one device MXNet keeps the states' kvstore keys
        # and never uses them (docs/conformance.md, test_save_load; minimod re-keys them)
        single = mx.mod.Module.load(prefix, 2, load_optimizer_states=True,
                                    context=[mx.cpu(0), mx.cpu(1)])
        single.bind(data_shapes=[("data", (9, 6))], label_shapes=[("softmax_label", (9,))])
        single.init_optimizer(kvstore="device", optimizer="sgd", optimizer_params=sgd)
    for i in range(2, 4):
        single.forward_backward(batch(mx, x, y, i, 9))
        single.update()
    out.update(params_out(single, "resumed"))
    return out
