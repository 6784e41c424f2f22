"""A process killed (SIGKILL) at a random moment while saving checkpoints never leaves an
unreadable checkpoint.

A forked child saves the same checkpoint (symbol JSON, a 2 MB `.params`, the optimizer
`.states`) over and over, each time with every parameter and every optimizer state filled with
the save's number `i`, and records in shared memory which save it started and which it
finished. The parent kills it with SIGKILL after a random delay, then loads the checkpoint the
way a user would (`Module.load` with optimizer states) and demands:

* every file loads (no MXNetError, no partial file);
* each file is whole and from one save: all its arrays hold one number, which is either the
  last finished save or the one in progress (a file is the old version or the new one);
* the saves before the kill are not lost: nothing older than the last finished save appears.

REPETITIONS kills (150 by default, `MINIMOD_CRASH_REPS` to change; about 9 s here). The test
also counts how many kills landed in the middle of writing a file (a temporary file was left
behind), to show the kills hit the dangerous moments and not only the gaps between saves.
"""
import glob
import mmap
import os
import random
import signal
import struct
import time

import numpy as np
import pytest

import minimod as mx

REPETITIONS = int(os.environ.get("MINIMOD_CRASH_REPS", "150"))

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _module():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=512, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc2")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.bind(data_shapes=[("data", (4, 1000))], label_shapes=[("softmax_label", (4,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(kvstore=None, optimizer="sgd",
                       optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    batch = mx.io.DataBatch([mx.nd.ones((4, 1000))], [mx.nd.zeros((4,))])
    mod.forward_backward(batch)
    mod.update()  # creates the momentum states
    return mod


def _fill(mod, value):
    arg_params, aux_params = mod.get_params()
    for array in arg_params.values():
        array[:] = value
    mod.set_params(arg_params, aux_params)
    for state in mod._updater.states.values():
        state[:] = value


def _saver(mod, prefix, progress):
    """The child: save forever, recording started/finished save numbers."""
    i = 0
    while True:
        i += 1
        _fill(mod, float(i))
        struct.pack_into("<q", progress, 0, i)          # started
        mod.save_checkpoint(prefix, 1, save_optimizer_states=True)
        struct.pack_into("<q", progress, 8, i)          # finished


def _single_value(arrays, what):
    values = {float(v) for a in arrays for v in np.unique(a.asnumpy())}
    assert len(values) == 1, "%s mixes saves %s" % (what, sorted(values))
    return values.pop()


def test_sigkill_while_saving_never_leaves_an_unreadable_checkpoint(tmp_path):
    mod = _module()
    prefix = str(tmp_path / "ckpt")
    rng = random.Random(1234)
    progress = mmap.mmap(-1, 16)
    mid_write = 0
    save_seconds = None
    for rep in range(REPETITIONS):
        struct.pack_into("<qq", progress, 0, 0, 0)
        pid = os.fork()
        if pid == 0:  # child
            try:
                _saver(mod, prefix, progress)
            finally:
                os._exit(0)
        # wait until at least one checkpoint of this child is complete, then kill at random
        start = time.perf_counter()
        while struct.unpack_from("<q", progress, 8)[0] < 1:
            time.sleep(0.001)
            assert time.perf_counter() - start < 30, "the saving child made no progress"
        if save_seconds is None:
            t0 = time.perf_counter()
            while struct.unpack_from("<q", progress, 8)[0] < 3:
                time.sleep(0.0005)
            save_seconds = (time.perf_counter() - t0) / 2
        time.sleep(rng.uniform(0, 2.5 * save_seconds))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        started, finished = struct.unpack_from("<qq", progress, 0)
        leftovers = glob.glob(os.path.join(str(tmp_path), ".*.tmp"))
        mid_write += bool(leftovers)
        for path in leftovers:
            os.unlink(path)

        loaded = mx.mod.Module.load(prefix, 1, load_optimizer_states=True,
                                    context=mx.cpu())
        loaded.bind(data_shapes=[("data", (4, 1000))], label_shapes=[("softmax_label", (4,))])
        loaded.init_optimizer(kvstore=None, optimizer="sgd",
                              optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
        arg_params, _ = loaded.get_params()
        params_value = _single_value(arg_params.values(), "the .params file")
        states_value = _single_value(loaded._updater.states.values(), "the .states file")
        for value, what in ((params_value, "params"), (states_value, "states")):
            assert value in (finished, started), (
                "rep %d: %s holds save %s, but the last finished save was %d and save %d was "
                "in progress" % (rep, what, value, finished, started))
    progress.close()
    print("%d SIGKILLs, %d of them in the middle of writing a file, one save ~%.1f ms"
          % (REPETITIONS, mid_write, 1000 * save_seconds))
    # the kills must hit writes, or the test proves nothing
    assert mid_write >= REPETITIONS // 10
