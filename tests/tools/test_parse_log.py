"""minimod.tools.parse_log prints the table MXNet 1.9.1's tools/parse_log.py prints for the same
log (its output kept in tests/data/parse_log), and reads the log minimod's own fit writes."""
import logging
import os
import subprocess
import sys

import numpy as np

import minimod as mx
from minimod.tools import parse_log

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "parse_log")
LOG = os.path.join(DATA, "train.log")


def test_same_tables_as_mxnet(capsys):
    for fmt in ("markdown", "none"):
        assert parse_log.main([LOG, "--format", fmt, "--metric-names", "accuracy",
                               "cross-entropy"]) == 0
        assert capsys.readouterr().out == open(os.path.join(DATA, "mxnet_%s.txt" % fmt)).read()


def test_runs_as_a_module():
    proc = subprocess.run([sys.executable, "-m", "minimod.tools.parse_log", LOG],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[2] == "|  1 | 0.842969 | 0.901000 | 2.3 |"


def test_reads_what_fit_logs_and_marks_missing_columns(tmp_path):
    path = str(tmp_path / "fit.log")
    handler = logging.FileHandler(path)
    logger = logging.getLogger("parse_log_test")
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    rs = np.random.RandomState(0)
    x, y = rs.randn(64, 5).astype(np.float32), rs.randint(0, 3, 64).astype(np.float32)
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3),
                               name="softmax")
    mod = mx.mod.Module(net, logger=logger)
    mod.fit(mx.io.NDArrayIter(x, y, batch_size=16), num_epoch=2, optimizer_params={
        "learning_rate": 0.1})
    handler.close()
    logger.removeHandler(handler)
    data = parse_log.parse(open(path), ["accuracy"])
    assert sorted(data) == [0, 1]
    for train, val, seconds in data.values():
        assert 0 <= train <= 1 and val is None and seconds >= 0
    table = parse_log.format_table(data, ["accuracy"])
    assert table.splitlines()[2].split(" | ")[2] == "-"
