"""Write states_reference.npz: the values MXNet 1.9.1 itself reads from the golden `.states` files.

Run under the MXNet venv (not in CI): the golden files are trusted here, so MXNet's own
`Updater.set_states` (a plain pickle.loads) may read them.

    OMP_NUM_THREADS=1 /tmp/mxenv/bin/python tests/data/optimizer/gen_states_reference.py

Keys: `<file>/<key>/<slot>` with slots in flattening order of each state.
"""
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "golden")


def flatten(state):
    if state is None:
        return []
    if isinstance(state, (tuple, list)):
        return [a for item in state for a in flatten(item)]
    return [state]


def main():
    out = {}
    for fname in ("toy-0001.states", "toy1-0001.states"):
        updater = mx.optimizer.get_updater(mx.optimizer.create("sgd"))
        with open(os.path.join(GOLDEN, fname), "rb") as handle:
            updater.set_states(handle.read())
        for key, state in updater.states.items():
            for slot, arr in enumerate(flatten(state)):
                out[f"{fname}/{key}/{slot}"] = arr.asnumpy()
    np.savez_compressed(os.path.join(HERE, "states_reference.npz"), **out)
    print(f"wrote {len(out)} arrays")


if __name__ == "__main__":
    main()
