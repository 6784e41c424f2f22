"""The same graphs on a GPU give the CPU's numbers (skipped on machines without a GPU)."""
import numpy as np
import pytest

import minimod as mx
from minimod.testing import check_consistency

from ..passes.graphs import GRAPHS

pytestmark = pytest.mark.skipif(mx.num_gpus() == 0, reason="no GPU on this machine")


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_graph_on_gpu_matches_cpu(name):
    sym, shapes = GRAPHS[name]()
    shapes = {k: v for k, v in shapes.items()}
    ctx_list = [dict(ctx=mx.cpu(0), **shapes), dict(ctx=mx.gpu(0), **shapes)]
    check_consistency(sym, ctx_list, scale=0.5, tol=1e-4)


def test_module_trains_on_gpu_like_cpu():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (32, 6)).astype(np.float32)
    y = rng.randint(0, 3, 32).astype(np.float32)
    results = []
    for ctx in (mx.cpu(0), mx.gpu(0)):
        rng = np.random.RandomState(1)
        with mx.name.NameManager():
            net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
            net = mx.sym.SoftmaxOutput(net, name="softmax")
        mod = mx.mod.Module(net, context=ctx)
        mod.bind(data_shapes=[("data", (8, 6))], label_shapes=[("softmax_label", (8,))])
        # parameters from numpy: the CPU and GPU generators draw different numbers
        mod.set_params({"fc_weight": mx.nd.array(rng.uniform(-0.5, 0.5, (3, 6))),
                        "fc_bias": mx.nd.zeros((3,))}, {})
        rng = np.random.RandomState(1)
        mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
        for i in range(4):
            mod.forward_backward(mx.io.DataBatch([mx.nd.array(x[i * 8:(i + 1) * 8])],
                                                 [mx.nd.array(y[i * 8:(i + 1) * 8])]))
            mod.update()
        results.append(mod.get_params()[0]["fc_weight"].asnumpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-4, atol=1e-5)
