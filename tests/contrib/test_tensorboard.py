"""mx.contrib.tensorboard.LogMetricsCallback, with a stand-in writer and, when installed, with
tensorboardX's real one."""
import glob
import sys
import types

import pytest

import minimod as mx
from minimod.contrib import tensorboard


class FakeWriter:
    made = []

    def __init__(self, logdir):
        self.logdir = logdir
        self.scalars = []
        FakeWriter.made.append(self)

    def add_scalar(self, name, value, global_step=None):
        self.scalars.append((name, value, global_step))


def params(epoch, metric):
    return mx.model.BatchEndParam(epoch=epoch, nbatch=0, eval_metric=metric, locals=None)


def metric_with(values):
    metric = mx.metric.create(["acc", "mse"])
    metric.update([mx.nd.array(values[0])], [mx.nd.array(values[1])])
    return metric


def test_logs_every_metric_with_prefix(monkeypatch):
    monkeypatch.setitem(sys.modules, "mxboard", None)  # not installed
    monkeypatch.setitem(sys.modules, "tensorboardX", types.SimpleNamespace(
        SummaryWriter=FakeWriter))
    cb = tensorboard.LogMetricsCallback("logs/train", prefix="train")
    writer = FakeWriter.made[-1]
    assert writer.logdir == "logs/train"
    metric = metric_with(([0, 1], [[0.9, 0.1], [0.2, 0.8]]))
    cb(params(3, metric))
    names = [s[0] for s in writer.scalars]
    assert names == ["train-accuracy", "train-mse"]
    assert all(s[2] == 3 for s in writer.scalars)
    assert writer.scalars[0][1] == pytest.approx(1.0)
    cb(params(4, None))  # no metric: nothing written
    assert len(writer.scalars) == 2


def test_prefers_mxboard(monkeypatch):
    class MxboardWriter(FakeWriter):
        pass
    monkeypatch.setitem(sys.modules, "mxboard", types.SimpleNamespace(
        SummaryWriter=MxboardWriter))
    cb = tensorboard.LogMetricsCallback("logs")
    assert isinstance(cb.summary_writer, MxboardWriter)
    cb(params(0, metric_with(([1], [[0.0, 1.0]]))))
    assert [s[0] for s in cb.summary_writer.scalars] == ["accuracy", "mse"]


def test_no_writer_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "mxboard", None)
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    with pytest.raises(ImportError, match="pip install tensorboardX"):
        tensorboard.LogMetricsCallback("logs")


def test_real_tensorboardx_writes_events(tmp_path, monkeypatch):
    pytest.importorskip("tensorboardX")
    monkeypatch.setitem(sys.modules, "mxboard", None)
    cb = tensorboard.LogMetricsCallback(str(tmp_path), prefix="eval")
    cb(params(1, metric_with(([0, 1], [[0.9, 0.1], [0.2, 0.8]]))))
    cb.summary_writer.close()
    files = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    assert len(files) == 1
    data = open(files[0], "rb").read()
    assert b"eval-accuracy" in data and b"eval-mse" in data


def test_contrib_namespace():
    assert mx.contrib.tensorboard.LogMetricsCallback is tensorboard.LogMetricsCallback
