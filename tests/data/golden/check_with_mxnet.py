"""Generate and cross-check NDArray golden files with a real MXNet 1.9.1 (not part of CI).

Run under a venv with `pip install mxnet==1.9.1 numpy==1.23.5`, from the repository root:

    OMP_NUM_THREADS=1 /path/to/mxenv/bin/python tests/data/golden/check_with_mxnet.py generate
    OMP_NUM_THREADS=1 /path/to/mxenv/bin/python tests/data/golden/check_with_mxnet.py check

`generate` writes, next to this script, files MXNet itself produced:
  sparse.nd     dict {'rsp': row_sparse (3, 2), 'csr': csr (3, 2) float64} (read back densified)
  bool.nd       list [bool (2, 3) array]
  pickled.bin   `NDArray.__getstate__()['handle']` of mx.nd.array([[1, 2], [3, 4]], int32)
  behaviour.json results of NDArray calls whose MXNet output minimod's tests pin down

`check` writes files with minimod (every dtype, list and dict forms, odd shapes) and verifies that
MXNet's `nd.load` reads them back with the same values, and that MXNet unpickles minimod's
pickle state. The other golden files (one.nd, list.nd, dtypes.nd, toy*) come from
/work/shared/golden and were written by MXNet 1.9.1 too.
"""
import json
import os
import pickle
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def read_bytes(path):
    with open(path, "rb") as handle:
        return handle.read()


def generate(mx):
    nd = mx.nd
    rsp = nd.sparse.row_sparse_array((np.array([[1, 2]], dtype="float32"), np.array([1])),
                                     shape=(3, 2))
    csr = nd.sparse.csr_matrix((np.array([1.0, 2.0]), np.array([0, 1]), np.array([0, 1, 1, 2])),
                               shape=(3, 2))
    nd.save(os.path.join(HERE, "sparse.nd"), {"rsp": rsp, "csr": csr})
    nd.save(os.path.join(HERE, "bool.nd"), [nd.array([[1, 0, 1], [0, 0, 1]], dtype="bool")])
    state = nd.array([[1, 2], [3, 4]], dtype="int32").__getstate__()
    with open(os.path.join(HERE, "pickled.bin"), "wb") as handle:
        handle.write(bytes(state["handle"]))
    a = nd.arange(6).reshape((2, 3))
    ai = nd.array([-3, -1, 1, 3], dtype="int32")
    behaviour = {
        "repr_2x3": repr(a),
        "repr_int": repr(nd.array([1, 2], dtype="int32")),
        "repr_f16": repr(nd.array([1.5, 2], dtype="float16")),
        "int_div_2": (ai / 2).asnumpy().tolist(),
        "int_mod_2": (ai % 2).asnumpy().tolist(),
        "int_mul_1_5": (ai * 1.5).asnumpy().tolist(),
        "sum_shape": list(nd.sum(a).shape),
        "argmax_axis1": nd.argmax(a, axis=1).asnumpy().tolist(),
        "pick_clip": nd.pick(a, nd.array([5, -1]), axis=1).asnumpy().tolist(),
        "take_wrap": nd.take(nd.arange(10), nd.array([1, 12, -1]), mode="wrap").asnumpy().tolist(),
    }
    with open(os.path.join(HERE, "behaviour.json"), "w") as handle:
        json.dump(behaviour, handle, indent=1, sort_keys=True)
    print("generated sparse.nd bool.nd pickled.bin behaviour.json in", HERE)


def check(mx):
    sys.path.insert(0, ROOT)
    import minimod.ndarray as mnd

    rng = np.random.RandomState(0)
    cases = {}
    for dtype in ("float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bool"):
        for shape in ((1,), (3,), (2, 3), (2, 1, 4), (0,), (2, 0, 3)):
            values = (rng.rand(*shape) * 100).astype(dtype)
            cases["{}_{}".format(dtype, "x".join(map(str, shape)))] = values
    with tempfile.TemporaryDirectory() as tmp:
        as_dict = os.path.join(tmp, "dict.nd")
        mnd.save(as_dict, {k: mnd.array(v, dtype=v.dtype) for k, v in cases.items()})
        loaded = mx.nd.load(as_dict)
        assert list(loaded) == list(cases), "key order differs"
        for key, want in cases.items():
            got = loaded[key]
            assert got.dtype == want.dtype, (key, got.dtype, want.dtype)
            assert got.shape == want.shape, (key, got.shape, want.shape)
            assert np.array_equal(got.asnumpy(), want), key
        as_list = os.path.join(tmp, "list.nd")
        mnd.save(as_list, [mnd.array(v, dtype=v.dtype) for v in cases.values()])
        loaded = mx.nd.load(as_list)
        assert isinstance(loaded, list) and len(loaded) == len(cases)
        single = os.path.join(tmp, "one.nd")
        mnd.save(single, mnd.array([7.0]))
        assert read_bytes(single) == read_bytes(os.path.join(HERE, "one.nd"))
        # MXNet writes, minimod reads back identical bytes.
        mx_file = os.path.join(tmp, "mx.nd")
        mx.nd.save(mx_file, {k: mx.nd.array(v, dtype=v.dtype) for k, v in cases.items()
                             if 0 not in v.shape})
        assert mnd.save_to_bytes(mnd.load(mx_file)) == read_bytes(mx_file)
    # Pickle state: minimod's record is accepted by MXNet's NDArray.__setstate__.
    arr = mnd.array([[1, 2], [3, 4]], dtype="int32")
    restored = mx.nd.NDArray(None)
    restored.__setstate__({"handle": arr.__getstate__()["handle"]})
    assert restored.dtype == np.int32 and restored.asnumpy().tolist() == [[1, 2], [3, 4]]
    mx_state = pickle.dumps(mx.nd.array([1.5, 2.5]))
    assert b"mxnet.ndarray.ndarray" in mx_state
    print(f"check passed: {len(cases)} arrays round-tripped through MXNet {mx.__version__}")


def main():
    import mxnet as mx

    command = sys.argv[1] if len(sys.argv) > 1 else "check"
    {"generate": generate, "check": check}[command](mx)


if __name__ == "__main__":
    main()
