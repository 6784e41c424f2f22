"""minimod's random streams start from a fixed seed, as MXNet's do: two fresh processes that
never call mx.random.seed draw the same initial weights, dropout masks and samples."""
import subprocess
import sys

SCRIPT = r"""
import numpy as np
import minimod as mx
x = mx.sym.Dropout(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4), p=0.5)
mod = mx.mod.Module(x, label_names=None)
mod.bind(data_shapes=[("data", (3, 5))])
mod.init_params(mx.init.Xavier())
mod.forward(mx.io.DataBatch([mx.nd.ones((3, 5))]), is_train=True)
draws = [mod.get_outputs()[0].asnumpy(), mx.nd.random.normal(shape=(4,)).asnumpy()]
draws += [v.asnumpy() for v in mod.get_params()[0].values()]
print(repr(np.concatenate([d.ravel() for d in draws]).tolist()))
"""


def _run() -> str:
    return subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          check=True).stdout


def test_two_fresh_processes_draw_the_same_numbers():
    first, second = _run(), _run()
    assert first == second and len(first) > 20
