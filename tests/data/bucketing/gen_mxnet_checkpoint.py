"""Write a BucketingModule checkpoint with MXNet 1.9.1 (run with the MXNet venv):

    /tmp/mxenv/bin/python tests/data/bucketing/gen_mxnet_checkpoint.py

Files: mxlm-0001.params, mxlm-<key>-symbol.json per bucket, mxlm.buckets, and
mxlm-reference.npz with MXNet's predictions on fixed batches after loading it back.
"""
import os
import sys

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lm_model  # noqa: E402

mod, _ = lm_model.train(mx, default_key=8)
prefix = os.path.join(HERE, "mxlm")
mod.save_checkpoint(prefix, 1)
loaded = mx.mod.BucketingModule.load(prefix, 1, sym_gen=lm_model.make_sym_gen(mx),
                                     default_bucket_key=8)
loaded.bind(data_shapes=[mx.io.DataDesc("data", (lm_model.BATCH, 8))],
            label_shapes=[mx.io.DataDesc("softmax_label", (lm_model.BATCH, 8))],
            for_training=False)
np.savez(prefix + "-reference.npz", **lm_model.predictions(mx, loaded))
print("wrote", prefix, "files with mxnet", mx.__version__)
