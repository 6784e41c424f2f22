"""`mx.gluon`: importable, not implemented.

Gluon (MXNet's imperative Block API) is outside minimod, which implements the symbolic stack
(Symbol, Executor, Module). This module exists so that a program that imports it for one
corner loads; using any of its names raises AttributeError saying that Gluon is not
implemented, and that `mx.mod.Module` over `mx.sym` (or a loop on NDArrays with
`mx.autograd`) is the way to build the same network.
"""


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError("minimod does not implement Gluon (mx.gluon.%s): build the network "
                         "with mx.sym and train it with mx.mod.Module, or write the training "
                         "loop on NDArrays with mx.autograd" % name)
