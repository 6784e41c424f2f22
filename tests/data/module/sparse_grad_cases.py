"""A Module training an Embedding with sparse_grad=True, run alike by MXNet 1.9.1
(gen_sparse_grad_golden.py) and minimod (tests/module/test_sparse_grad.py): the table after
three batches (rows 4 and 5 are never looked up, row 3 only in the second batch)."""
import os

import numpy as np

# (optimizer, parameters): MXNet's lazy updates (SGD and ccSGD with momentum or weight decay,
# multi-precision included, and Adam), the same optimizers with lazy_update=False (MXNet's
# dense update), SGD without either (a row-sparse gradient changes nothing there), and
# optimizers that have no lazy form
CASES = [
    ("sgd", {"learning_rate": 0.1, "wd": 0.1}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.05, "multi_precision": True}),
    ("ccsgd", {"learning_rate": 0.1, "momentum": 0.9}),
    ("adam", {"learning_rate": 0.1, "wd": 0.01}),
    ("sgd", {"learning_rate": 0.1}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.1, "lazy_update": False}),
    ("adam", {"learning_rate": 0.1, "lazy_update": False}),
    ("adagrad", {"learning_rate": 0.1}),
    ("rmsprop", {"learning_rate": 0.1}),
    ("nag", {"learning_rate": 0.1, "momentum": 0.9}),
    ("signum", {"learning_rate": 0.1, "momentum": 0.9}),
    ("ftrl", {"learning_rate": 0.1}),
    ("adamax", {"learning_rate": 0.1}),  # NaN in rows no batch touched: Adamax has no epsilon
    ("nadam", {"learning_rate": 0.1}),
    ("adadelta", {}),
    ("ftml", {"learning_rate": 0.1}),
    ("lamb", {"learning_rate": 0.1}),
]
BATCHES = [np.array([[0, 1], [1, 2]]), np.array([[3, 3], [0, 0]]), np.array([[1, 1], [2, 0]])]


def module(mx, sparse_grad=True, contexts=None, batch=2):
    data = mx.sym.var("data")
    emb = mx.sym.Embedding(data, input_dim=6, output_dim=2, sparse_grad=sparse_grad,
                           name="emb")
    out = mx.sym.LinearRegressionOutput(mx.sym.sum(emb, axis=1), mx.sym.var("softmax_label"),
                                        name="lro")
    contexts = contexts or [mx.cpu()]
    mod = mx.mod.Module(out, context=contexts)
    mod.bind(data_shapes=[("data", (batch, 2))], label_shapes=[("softmax_label", (batch, 2))])
    mod.init_params(mx.init.Constant(0.3))
    return mod


def train(mx, optimizer, params, sparse_grad=True, devices=1, wide=False, in_store=False):
    """The table after the three batches; `wide`: each batch twice as large (the second half
    looks up other rows); with several devices, the gradients are summed in a 'local' kvstore,
    which updates the weights (`in_store`) or leaves that to the devices
    (MXNET_UPDATE_ON_KVSTORE=0)."""
    mod = module(mx, sparse_grad, [mx.cpu(k) for k in range(devices)], 4 if wide else 2)
    os.environ["MXNET_UPDATE_ON_KVSTORE"] = "1" if in_store else "0"
    try:
        mod.init_optimizer(kvstore="local", optimizer=optimizer, optimizer_params=dict(params))
    finally:
        os.environ.pop("MXNET_UPDATE_ON_KVSTORE")
    for batch in BATCHES:
        if wide:
            batch = np.concatenate([batch, (batch + 2) % 5])
        mod.forward(mx.io.DataBatch([mx.nd.array(batch)], [mx.nd.ones((len(batch), 2))]),
                    is_train=True)
        mod.backward()
        mod.update()
    return mod.get_params()[0]["emb_weight"].asnumpy()
