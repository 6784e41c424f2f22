"""Check that MXNet 1.9.1 loads the pickles `minimod.optimizer.dump_states_mxnet` writes.

Two steps (not in CI):

    PYTHONPATH=. python tests/data/optimizer/check_dump_states_mxnet.py write /tmp/mm.states
    OMP_NUM_THREADS=1 /tmp/mxenv/bin/python tests/data/optimizer/check_dump_states_mxnet.py \
        read /tmp/mm.states

`write` (minimod) saves states with int and str keys, None, single arrays, tuples and several
dtypes, plus the expected values in `<path>.npz`; `read` (MXNet) loads the pickle through
`Updater.set_states` and compares every array, exiting non-zero on any difference.
"""
import sys

import numpy as np


def expected():
    rng = np.random.RandomState(7)
    return {
        0: None,
        1: rng.randn(3, 4).astype(np.float32),
        "fc_bias": (rng.randn(4).astype(np.float32), rng.randn(4).astype(np.float32)),
        7: (None, rng.randn(2, 2).astype(np.float16)),
        "big": rng.randn(5, 6).astype(np.float64),
        3: rng.randint(0, 9, size=(4,)).astype(np.int32),
    }


def flatten(state):
    if state is None:
        return []
    if isinstance(state, (tuple, list)):
        return [a for item in state for a in flatten(item)]
    return [state]


def write(path):
    import minimod as mx
    from minimod.optimizer import dump_states_mxnet

    def to_nd(state):
        if state is None:
            return None
        if isinstance(state, tuple):
            return tuple(to_nd(s) for s in state)
        return mx.nd.array(state, dtype=state.dtype)

    with open(path, "wb") as handle:
        handle.write(dump_states_mxnet({k: to_nd(v) for k, v in expected().items()}))
    print("wrote", path)


def read(path):
    import mxnet as mx
    updater = mx.optimizer.get_updater(mx.optimizer.create("sgd"))
    with open(path, "rb") as handle:
        updater.set_states(handle.read())
    want = expected()
    assert set(updater.states) == set(want), (set(updater.states), set(want))
    for key, state in want.items():
        got = updater.states[key]
        assert (got is None) == (state is None), key
        assert isinstance(got, tuple) == isinstance(state, tuple), (key, type(got))
        assert len(flatten(got)) == len(flatten(state)), key
        for a, b in zip(flatten(got), flatten(state)):
            assert isinstance(a, mx.nd.NDArray), (key, type(a))
            assert a.dtype == b.dtype and np.array_equal(a.asnumpy(), b), key
    print("MXNet", mx.__version__, "loaded", len(want), "states: all equal")


if __name__ == "__main__":
    {"write": write, "read": read}[sys.argv[1]](sys.argv[2])
