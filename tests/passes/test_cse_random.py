"""Common-subexpression elimination (passes/cse.py, on by default as in MXNet) merges equal
deterministic nodes but never two draws: every op that draws random numbers or runs user code
is marked `deterministic = False`."""
import numpy as np
import pytest

import minimod as mx
from minimod import backend
from minimod.ops.registry import list_ops


def _two(make):
    x = mx.sym.var("x")
    return mx.sym.Group([make(x, "a"), make(x, "b")])


@pytest.mark.parametrize("make", [
    lambda x, n: mx.sym.Dropout(x, p=0.5, name=n),
    lambda x, n: mx.sym.random.uniform(shape=(50,), name=n) + x,
    lambda x, n: mx.sym.LeakyReLU(x, act_type="rrelu", name=n)[0],
], ids=["dropout", "random_uniform", "rrelu"])
def test_two_equal_random_nodes_draw_separately(make):
    exe = _two(make).simple_bind(mx.cpu(), x=(50,), grad_req="null")
    exe.arg_dict["x"][:] = np.linspace(-2, -1, 50)  # negative: rrelu scales them
    a, b = (o.asnumpy() for o in exe.forward(is_train=True))
    assert not np.array_equal(a, b)
    assert "_copy" not in exe.get_optimized_symbol().tojson()


def test_equal_deterministic_nodes_are_merged_and_give_equal_outputs():
    exe = _two(lambda x, n: mx.sym.tanh(x, name=n)).simple_bind(mx.cpu(), x=(4,))
    exe.arg_dict["x"][:] = np.arange(4.0)
    a, b = (o.asnumpy() for o in exe.forward())
    np.testing.assert_array_equal(a, b)
    assert len([n for n in exe.get_optimized_symbol().get_internals().list_outputs()
                if n.endswith("_output") and "tanh" in n]) <= 2


def test_every_op_that_draws_is_marked_nondeterministic():
    drawing = {"Dropout", "LeakyReLU", "RNN", "Custom", "_shuffle", "_random_randint"}
    drawing |= {n for n in list_ops() if n.startswith(("_random_", "_sample_"))
                and not n.startswith("_random_pdf_")}  # densities: no draws
    assert all(not list_ops()[n].deterministic for n in drawing)
    assert all(list_ops()[n].deterministic for n in list_ops() if n.startswith("_random_pdf_"))
    assert backend.rng  # the one generator the drawing ops share
