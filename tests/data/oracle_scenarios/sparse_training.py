"""Sparse training through Module: a linear model over CSR input (sparse.dot with a row_sparse
weight gradient) on two devices, trained with lazy SGD momentum and then Adam on a 'local'
kvstore that updates, with row_sparse pulls by the batch's row ids (sparse_row_id_fn in
prepare), and an Embedding with
sparse_grad=True feeding a dense head trained with lazy Adagrad; the CSR batches come from
NDArrayIter over a CSR matrix. Outputs, weights after each step and the row_sparse gradients
(as dense arrays) each step. Not compared: the gradients' storage type, row_sparse in MXNet
and dense in minimod (docs/compatibility.md, "Sparse NDArrays")."""
import numpy as np

N, F, K, V, E = 4, 12, 3, 10, 5


def _csr_rows(rng, rows):
    dense = rng.uniform(-1, 1, size=(rows, F)).astype(np.float32)
    dense[rng.uniform(size=dense.shape) < 0.7] = 0
    return dense


def _linear(mx):
    data = mx.sym.Variable("data", stype="csr")
    weight = mx.sym.Variable("w", stype="row_sparse", shape=(F, K))
    bias = mx.sym.Variable("bias", shape=(K,))
    out = mx.sym.broadcast_add(mx.sym.sparse.dot(data, weight), bias)
    return mx.sym.SoftmaxOutput(out, name="softmax")


def _row_ids(mx):
    def row_ids(data_batch):
        # MXNet 1.9.1's NDArrayIter gives this CSR batch densely (docs/compatibility.md)
        return {"w": data_batch.data[0].tostype("csr").indices}
    return row_ids


def _train_linear(mx, optimizer, params, dense, labels, prefix):
    out = {}
    it = mx.io.NDArrayIter(mx.nd.array(dense).tostype("csr"), mx.nd.array(labels),
                           batch_size=N, last_batch_handle="discard")
    mod = mx.mod.Module(_linear(mx), context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    rng = np.random.RandomState(4)
    mod.init_params(arg_params={"w": mx.nd.array(rng.uniform(-0.3, 0.3, (F, K))),
                                "bias": mx.nd.array(rng.uniform(-0.1, 0.1, (K,)))})
    mod.init_optimizer(kvstore="local", optimizer=optimizer, optimizer_params=params)
    row_ids = _row_ids(mx)
    for i, data_batch in enumerate(it):
        mod.prepare(data_batch, sparse_row_id_fn=row_ids)
        mod.forward_backward(data_batch)
        out["%sprob%d" % (prefix, i)] = mod.get_outputs()[0].asnumpy()
        grad = mod._exec_group.execs[0].grad_dict["w"]
        out["%sg_w%d" % (prefix, i)] = grad.tostype("default").asnumpy()
        mod.update()
        mod.prepare(data_batch, sparse_row_id_fn=row_ids)
        arg, _ = mod.get_params()
        out["%sw%d" % (prefix, i)] = arg["w"].tostype("default").asnumpy()
        out["%sbias%d" % (prefix, i)] = arg["bias"].asnumpy()
    return out


def _embedding(mx):
    data = mx.sym.Variable("data")
    emb = mx.sym.Embedding(data, input_dim=V, output_dim=E, sparse_grad=True, name="emb")
    pooled = mx.sym.mean(emb, axis=1)
    fc = mx.sym.FullyConnected(pooled, num_hidden=K, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def _train_embedding(mx):
    out = {}
    rng = np.random.RandomState(9)
    mod = mx.mod.Module(_embedding(mx), context=mx.cpu())
    mod.bind(data_shapes=[("data", (N, 3))], label_shapes=[("softmax_label", (N,))])
    mod.init_params(arg_params={
        "emb_weight": mx.nd.array(rng.uniform(-0.5, 0.5, (V, E))),
        "fc_weight": mx.nd.array(rng.uniform(-0.5, 0.5, (K, E))),
        "fc_bias": mx.nd.zeros((K,))})
    mod.init_optimizer(optimizer="adagrad", optimizer_params={"learning_rate": 0.2})
    for i in range(3):
        ids = rng.randint(0, V // 2 + i * 2, size=(N, 3)).astype(np.float32)
        label = rng.randint(0, K, size=(N,)).astype(np.float32)
        mod.forward_backward(mx.io.DataBatch([mx.nd.array(ids)], [mx.nd.array(label)]))
        out["emb_prob%d" % i] = mod.get_outputs()[0].asnumpy()
        grad = mod._exec_group.execs[0].grad_dict["emb_weight"]
        out["emb_g%d" % i] = grad.tostype("default").asnumpy()
        mod.update()
        arg, _ = mod.get_params()
        out["emb_weight%d" % i] = arg["emb_weight"].asnumpy()
        out["emb_fc%d" % i] = arg["fc_weight"].asnumpy()
    return out


def run(mx):
    rng = np.random.RandomState(17)
    dense = _csr_rows(rng, 3 * N + 1)
    labels = rng.randint(0, K, size=(3 * N + 1,)).astype(np.float32)
    out = _train_linear(mx, "sgd", {"learning_rate": 0.3, "momentum": 0.9, "wd": 0.01,
                                    "lazy_update": True}, dense, labels, "sgd_")
    out.update(_train_linear(mx, "adam", {"learning_rate": 0.05, "lazy_update": True},
                             dense, labels, "adam_"))
    out.update(_train_embedding(mx))
    return out
