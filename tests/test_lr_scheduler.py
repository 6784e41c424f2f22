"""LR schedules against MXNet 1.9.1 (tests/data/optimizer/optimizer_golden.npz, written by
gen_optimizer_golden.py under MXNet), plus their checks and log lines."""
import json
import logging
import os

import numpy as np
import pytest

from minimod import lr_scheduler

GOLDEN = os.path.join(os.path.dirname(__file__), "data", "optimizer", "optimizer_golden.npz")
_DATA = np.load(GOLDEN)
SCHEDULES = sorted({k.split("/")[1] for k in _DATA.files if k.startswith("sched/")})


@pytest.mark.parametrize("name", SCHEDULES)
def test_schedule_matches_mxnet(name):
    cls, kwargs = json.loads(str(_DATA[f"sched/{name}/spec"]))
    sched = getattr(lr_scheduler, cls)(**kwargs)
    got = np.array([sched(n) for n in range(41)])
    np.testing.assert_allclose(got, _DATA[f"sched/{name}/lr"], rtol=1e-15, atol=0)


def test_factor_steps_strictly_after_each_step_and_logs(caplog):
    sched = lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    with caplog.at_level(logging.INFO):
        rates = [sched(n) for n in range(7)]
    assert rates == [1.0, 1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
    assert "Update[3]: Change learning rate to 5.00000e-01" in caplog.text
    assert "Update[5]: Change learning rate to 2.50000e-01" in caplog.text


def test_factor_floor_message(caplog):
    sched = lr_scheduler.FactorScheduler(step=1, factor=0.1, base_lr=1.0, stop_factor_lr=0.05)
    with caplog.at_level(logging.INFO):
        assert sched(3) == 0.05
    assert "now learning rate arrived at 5.00000e-02" in caplog.text


def test_multifactor_strict_and_logs(caplog):
    sched = lr_scheduler.MultiFactorScheduler(step=[2, 4], factor=0.1, base_lr=1.0)
    with caplog.at_level(logging.INFO):
        assert sched(2) == 1.0
        assert sched(3) == pytest.approx(0.1)
        assert sched(10) == pytest.approx(0.01)
    assert caplog.text.count("Change learning rate") == 2


def test_warmup_linear_and_constant():
    lin = lr_scheduler.PolyScheduler(max_update=10, base_lr=0.1, warmup_steps=4,
                                     warmup_begin_lr=0.02)
    assert lin(0) == pytest.approx(0.02)
    assert lin(2) == pytest.approx(0.06)
    const = lr_scheduler.CosineScheduler(max_update=10, base_lr=0.1, warmup_steps=4,
                                         warmup_begin_lr=0.02, warmup_mode="constant")
    assert const(3) == 0.02
    assert const(4) == pytest.approx(0.1)
    assert const(100) == pytest.approx(0.1)  # past max_update: the last rate computed stays
    assert const(10) == pytest.approx(0.0)
    assert const(100) == pytest.approx(0.0)


@pytest.mark.parametrize("make, match", [
    (lambda: lr_scheduler.FactorScheduler(step=0), "step"),
    (lambda: lr_scheduler.FactorScheduler(step=2, factor=1.5), "factor"),
    (lambda: lr_scheduler.MultiFactorScheduler(step=[3, 2]), "increase"),
    (lambda: lr_scheduler.MultiFactorScheduler(step=[0, 2]), ">= 1"),
    (lambda: lr_scheduler.PolyScheduler(max_update=0), "max_update"),
    (lambda: lr_scheduler.CosineScheduler(max_update=5, warmup_mode="cubic"), "warmup_mode"),
    (lambda: lr_scheduler.LRScheduler(base_lr=0.01, warmup_begin_lr=0.1), "warmup_begin_lr"),
    (lambda: lr_scheduler.LRScheduler(warmup_steps=-1), "warmup_steps"),
])
def test_bad_arguments_name_the_parameter(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_base_class_call_is_abstract():
    with pytest.raises(NotImplementedError, match="LRScheduler"):
        lr_scheduler.LRScheduler()(1)
