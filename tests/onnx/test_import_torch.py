"""ONNX files PyTorch wrote (tests/data/onnx/torch_*.onnx, by gen_torch_models.py with both of
its exporters: TorchScript at opset 13 and torch.export at opset 18): imported by minimod,
they compute PyTorch's own outputs."""
import glob
import os

import numpy as np
import pytest

import minimod as mx

from .helpers import minimod_forward

pytest.importorskip("onnx", reason="the onnx extra is not installed")

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "onnx")
GOLDEN = np.load(os.path.join(DATA, "torch_golden.npz"))
FILES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(DATA, "torch_*.onnx")))


def test_both_exporters_of_every_model_are_here():
    models = {k.split(":")[0] for k in GOLDEN.files}
    assert len(FILES) == 2 * len(models) == 8


@pytest.mark.parametrize("fname", FILES)
def test_pytorch_export_imports_to_pytorch_numbers(fname):
    model = fname[len("torch_"):].rsplit("_", 1)[0]
    sym, arg, aux = mx.contrib.onnx.import_model(os.path.join(DATA, fname))
    params = {k: v.asnumpy() for k, v in {**arg, **aux}.items()}
    x = GOLDEN[model + ":x"]
    got = minimod_forward(sym, {"x": x}, params)[0]
    want = GOLDEN[model + ":y"]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
