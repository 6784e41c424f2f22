"""Callbacks log MXNet 1.9.1's exact lines (tests/data/metric/callback_golden.json) and save
checkpoints at MXNet's epochs."""
import json
import os
import sys

import pytest

import minimod as mx
from minimod import callback, checkpoint

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "metric")
sys.path.insert(0, HERE)
import callback_cases  # noqa: E402

with open(os.path.join(HERE, "callback_golden.json")) as _f:
    GOLDEN = json.load(_f)


@pytest.fixture(scope="module")
def logged():
    return callback_cases.run_all(mx)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_log_lines_match_mxnet(logged, name):
    assert logged[name] == GOLDEN[name]


def test_do_checkpoint_saves_epoch_plus_one(monkeypatch):
    saved = []
    monkeypatch.setattr(checkpoint, "save_checkpoint", lambda *args: saved.append(args))
    cb = callback.do_checkpoint("run/prefix", period=2)
    for epoch in range(5):
        cb(epoch, "sym", {"w": 1}, {"a": 2})
    assert saved == [("run/prefix", 2, "sym", {"w": 1}, {"a": 2}),
                     ("run/prefix", 4, "sym", {"w": 1}, {"a": 2})]
    saved.clear()
    every = callback.do_checkpoint("p", period=0)  # period below 1 means every epoch
    every(0, None, {}, {})
    assert saved == [("p", 1, None, {}, {})]


def test_module_checkpoint_calls_the_module():
    class Mod:
        calls = []

        def save_checkpoint(self, prefix, epoch, save_optimizer_states=False):
            self.calls.append((prefix, epoch, save_optimizer_states))

    mod = Mod()
    cb = callback.module_checkpoint(mod, "m", period=3, save_optimizer_states=True)
    for epoch in range(7):
        cb(epoch)
    assert mod.calls == [("m", 3, True), ("m", 6, True)]


def test_speedometer_first_call_only_starts_the_clock(caplog):
    speed = callback.Speedometer(10, frequent=1)
    param = callback_cases.BatchEndParam(0, 0, None, None)
    with caplog.at_level("INFO", logger=""):
        speed(param)
        assert caplog.records == []
        speed(param._replace(nbatch=1))
    assert caplog.records[0].getMessage().startswith("Iter[0] Batch [1]\tSpeed: ")
    assert caplog.records[0].name == "root"
