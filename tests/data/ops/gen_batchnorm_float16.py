"""Write batchnorm_float16_golden.npz: MXNet 1.9.1's BatchNorm on float16 data (its parameters,
statistics and mean/var outputs are float32), one training forward and backward (run with
MXNet's Python: python tests/data/ops/gen_batchnorm_float16.py)."""
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
rs = np.random.RandomState(0)
x, gamma, beta = rs.randn(4, 3, 2, 2), rs.rand(3) + 0.5, rs.randn(3)
head = rs.randn(4, 3, 2, 2)
net = mx.sym.BatchNorm(mx.sym.var("x"), fix_gamma=False, name="bn")
exe = net.simple_bind(mx.cpu(), x=x.shape, type_dict={"x": np.float16})
exe.arg_dict["x"][:] = x
exe.arg_dict["bn_gamma"][:] = gamma
exe.arg_dict["bn_beta"][:] = beta
exe.forward(is_train=True)
exe.backward(mx.nd.array(head, dtype=np.float16))
np.savez(os.path.join(HERE, "batchnorm_float16_golden.npz"), x=x, gamma=gamma, beta=beta,
         head=head,
         out=exe.outputs[0].asnumpy(), dx=exe.grad_dict["x"].asnumpy(),
         dgamma=exe.grad_dict["bn_gamma"].asnumpy(), dbeta=exe.grad_dict["bn_beta"].asnumpy(),
         moving_mean=exe.aux_dict["bn_moving_mean"].asnumpy(),
         moving_var=exe.aux_dict["bn_moving_var"].asnumpy())
