"""A BucketingModule checkpoint written by minimod loads in MXNet 1.9.1 and predicts the same
(run by hand with the oracle venv present; not part of CI):

    python tests/data/bucketing/check_minimod_checkpoint_in_mxnet.py
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MXNET_SIDE = r'''
import sys, numpy as np, mxnet as mx
sys.path.insert(0, sys.argv[3])
import lm_model
mod = mx.mod.BucketingModule.load(sys.argv[1], 1, sym_gen=lm_model.make_sym_gen(mx),
                                  default_bucket_key=8)
mod.bind(data_shapes=[mx.io.DataDesc("data", (lm_model.BATCH, 8))],
         label_shapes=[mx.io.DataDesc("softmax_label", (lm_model.BATCH, 8))], for_training=False)
np.savez(sys.argv[2], **lm_model.predictions(mx, mod))
'''


def main():
    sys.path.insert(0, os.path.join(HERE, "..", "..", ".."))
    sys.path.insert(0, HERE)
    import lm_model

    import minimod as mx
    mod, _ = lm_model.train(mx, default_key=4)
    mine = lm_model.predictions(mx, mod)
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "lm")
        mod.save_checkpoint(prefix, 1)
        script = os.path.join(tmp, "side.py")
        with open(script, "w") as f:
            f.write(MXNET_SIDE)
        out = os.path.join(tmp, "theirs.npz")
        subprocess.run([os.environ.get("MXNET_PY", "/tmp/mxenv/bin/python"), script, prefix, out,
                        HERE], check=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
        theirs = np.load(out)
        worst = max(float(np.abs(mine[k] - theirs[k]).max()) for k in theirs.files)
        print("buckets", sorted(theirs.files), "max |minimod - mxnet|:", worst)
        assert worst < 1e-5
        print("OK: MXNet 1.9.1 loads minimod's BucketingModule checkpoint")


if __name__ == "__main__":
    main()
