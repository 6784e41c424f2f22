"""mx.model.FeedForward, MXNet's legacy training API, against MXNet 1.9.1
(tests/data/model/feedforward_golden.npz, written by gen_feedforward_golden.py from the runs in
feedforward_cases.py: shuffled NumPy data, momentum and weight decay, an eval pair, epoch_size)."""
import logging
import os
import sys
import warnings

import numpy as np
import pytest

import minimod as mx

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "model")
sys.path.insert(0, HERE)
import feedforward_cases as cases  # noqa: E402

GOLDEN = np.load(os.path.join(HERE, "feedforward_golden.npz"))


@pytest.mark.parametrize("name, epoch_size", [("plain", None), ("epoch_size", 4)])
def test_training_matches_mxnet(name, epoch_size):
    got = cases.run(mx, epoch_size)
    assert sorted("%s/%s" % (name, k) for k in got) == sorted(
        k for k in GOLDEN.files if k.startswith(name + "/"))
    for key, value in got.items():
        np.testing.assert_allclose(value, GOLDEN["%s/%s" % (name, key)], rtol=1e-5, atol=1e-6,
                                   err_msg=key)


def _model(**kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return mx.model.FeedForward(cases._net(mx), numpy_batch_size=8, **kwargs)


def test_create_save_load_and_predict(tmp_path):
    x, y, _ = cases._data()
    mx.random.seed(0)
    np.random.seed(0)
    epochs, batches = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        model = mx.model.FeedForward.create(
            cases._net(mx), x, y, num_epoch=2, numpy_batch_size=8, learning_rate=0.1,
            epoch_end_callback=lambda epoch, *rest: epochs.append(epoch),
            batch_end_callback=lambda param: batches.append(param.nbatch),
            initializer=mx.init.Xavier())
    assert epochs == [0, 1] and batches[:3] == [1, 2, 3]
    prefix = str(tmp_path / "ff")
    model.save(prefix)
    assert os.path.exists(prefix + "-0002.params")
    with pytest.warns(DeprecationWarning):
        loaded = mx.model.FeedForward.load(prefix, 2)
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))
    outputs, data, label = loaded.predict(x[:11], return_data=True)
    assert outputs.shape == (11, 3) and data.shape == (11, 5) and label.shape == (11,)
    np.testing.assert_array_equal(data, x[:11])
    acc = loaded.score(mx.io.NDArrayIter(x, y, 8))
    assert 0.0 <= acc <= 1.0
    assert loaded.score(mx.io.NDArrayIter(x, y, 8), num_batch=1) == pytest.approx(
        (model.predict(x[:8]).argmax(axis=1) == y[:8]).mean())


def test_deprecation_and_bad_arguments():
    with pytest.warns(DeprecationWarning, match="use mxnet.mod.Module instead"):
        mx.model.FeedForward(cases._net(mx))
    x, y, _ = cases._data()
    with pytest.raises(ValueError, match="y must be specified when X is numpy.ndarray"):
        _model(num_epoch=1).fit(x)
    with pytest.raises(ValueError, match="needs num_epoch"):
        _model().fit(x, y)
    with pytest.raises(ValueError, match="Label must be 1D"):
        _model(num_epoch=1).fit(x, np.zeros((len(x), 2)))
    with pytest.raises(ValueError, match="no parameters yet"):
        _model().predict(x)


def test_training_logs_like_mxnet(caplog):
    x, y, params = cases._data()
    model = _model(num_epoch=1, arg_params={k: mx.nd.array(v) for k, v in params.items()},
                   learning_rate=0.1)
    with caplog.at_level(logging.INFO):
        model.fit(x, y, eval_data=(x[:10], y[:10]))
    text = caplog.text
    assert "Epoch[0] Train-accuracy=" in text and "Epoch[0] Time cost=" in text
    assert "Epoch[0] Validation-accuracy=" in text
    caplog.clear()
    with caplog.at_level(logging.INFO):  # None turns the validation log off, as in MXNet
        model.fit(x, y, eval_data=(x[:10], y[:10]), eval_end_callback=None)
    assert "Train-accuracy=" in caplog.text and "Validation" not in caplog.text
