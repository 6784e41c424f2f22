"""mx.profiler records what minimod runs: executor steps, imperative calls, executor API calls,
memory pool growth and the user's objects, as MXNet's trace file and statistics."""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.profiler import RECORDER

TIME_HEADER = ("Name                          Total Count        Time (ms)    Min Time (ms)"
               "    Max Time (ms)    Avg Time (ms)")  # MXNet 1.9.1's dumps() layout


@pytest.fixture(autouse=True)
def fresh_profiler(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    defaults = dict(profile_all=False, profile_symbolic=True, profile_imperative=True,
                    profile_api=False, profile_memory=False, aggregate_stats=True,
                    continuous_dump=False, filename="profile.json")
    mx.profiler.set_config(**defaults)
    mx.profiler.set_state("stop")
    mx.profiler.resume()
    RECORDER.clear_events()
    RECORDER.clear_stats()
    yield
    mx.profiler.set_state("stop")
    mx.profiler.set_config(**dict(defaults, aggregate_stats=False))
    RECORDER.clear_events()
    RECORDER.clear_stats()


def _executor(ctx=mx.cpu()):
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
    net = mx.sym.Activation(net, act_type="relu", name="act")
    exe = net.simple_bind(ctx, data=(2, 3))
    exe.arg_dict["data"][:] = np.arange(6).reshape(2, 3)
    exe.arg_dict["fc_weight"][:] = 0.1
    return exe


def _stats():
    return json.loads(mx.profiler.dumps(format="json"))


def _run(exe, n=3):
    for _ in range(n):
        exe.forward(is_train=True)
        exe.backward(mx.nd.ones((2, 4), ctx=exe.outputs[0].context))


def test_executor_steps_and_the_trace_file(ctx):
    exe = _executor(ctx)
    mx.profiler.set_state("run")
    _run(exe)
    mx.profiler.set_state("stop")
    ops = _stats()["Time"]["operator"]
    # a rewritten step keeps its op's name with the rewrite noted: "FullyConnected(bias in
    # reader)" where the GPU's reader-bias pass moved the bias add into the next kernel
    assert {k.split("(")[0]: v["Count"] for k, v in ops.items()} == {
        "FullyConnected": 3, "Activation": 3, "_backward_Activation": 3,
        "_backward_FullyConnected": 3}
    for row in ops.values():
        assert 0 <= row["Min"] <= row["Avg"] <= row["Max"] <= row["Total"]
    mx.profiler.dump()
    assert os.listdir(".") == ["profile.json"]
    trace = json.load(open("profile.json"))
    assert trace["displayTimeUnit"] == "ms"
    device = "%s/%d" % (ctx.device_type, ctx.device_id)
    pids = {e["args"]["name"]: e["pid"] for e in trace["traceEvents"] if e["ph"] == "M"}
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == 12 and all(e["pid"] == pids[device] for e in spans)
    assert [e["name"].split("(")[0] for e in spans[:4]] == ["FullyConnected", "Activation",
                                              "_backward_Activation", "_backward_FullyConnected"]
    assert all(b["ts"] >= a["ts"] for a, b in zip(spans, spans[1:]))
    mx.profiler.dump()  # finished=True dropped the events: the next file holds none
    assert [e for e in json.load(open("profile.json"))["traceEvents"] if e["ph"] == "X"] == []


def test_profiling_changes_no_number_and_stops_cleanly():
    exe = _executor()
    exe.forward(is_train=True)
    plain = exe.outputs[0].asnumpy().copy()
    mx.profiler.set_state("run")
    exe.forward(is_train=True)
    mx.profiler.set_state("stop")
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), plain)
    _run(exe)  # stopped: nothing more is recorded
    assert _stats()["Time"]["operator"]["FullyConnected"]["Count"] == 1


def test_imperative_calls_under_mxnet_operator_names():
    mx.profiler.set_state("run")
    x = mx.nd.ones((2, 3))
    y = (x * 2 + x).sum()
    mx.nd.FullyConnected(x, mx.nd.ones((4, 3)), no_bias=True, num_hidden=4)
    mx.profiler.set_config(profile_imperative=False)
    mx.nd.relu(x)
    mx.profiler.set_state("stop")
    assert y.asscalar() == 18
    assert sorted(_stats()["Time"]["operator"]) == ["FullyConnected", "_mul_scalar",
                                                    "broadcast_add", "sum"]


def test_pause_resume_api_and_memory():
    mx.profiler.set_config(profile_api=True, profile_memory=True)
    mx.profiler.set_state("run")
    exe = _executor()  # binding grows the memory pool
    exe.forward()
    mx.profiler.pause()
    exe.forward()
    mx.profiler.resume()
    exe.forward()
    mx.profiler.set_state("stop")
    stats = _stats()
    assert stats["Time"]["api"]["Executor.forward"]["Count"] == 2
    assert stats["Time"]["operator"]["FullyConnected"]["Count"] == 2
    memory = stats["Memory"]["Device Storage"]["Memory: cpu/0"]
    assert memory["Count"] >= 1 and memory["Max"] > 0
    assert stats["Unit"] == {"Time": "ms", "Memory": "kB"}
    table = mx.profiler.dumps()
    assert "Device Storage\n=================\nName                          Total Count    " \
           "Min Use  (kB)    Max Use  (kB)    Avg Use  (kB)" in table


def test_user_objects():
    domain = mx.profiler.Domain("train")
    task, frame = mx.profiler.Task(domain, "batch"), domain.new_frame("epoch")
    event, counter = mx.profiler.Event("load"), mx.profiler.Counter(domain, "seen", 5)
    mx.profiler.set_state("run")
    for obj in (task, frame, event):
        obj.start()
        obj.stop()
    counter += 3
    counter.decrement(1)
    mx.profiler.Marker(domain, "here").mark("thread")
    mx.profiler.set_state("stop")
    time = _stats()["Time"]
    assert time["train"]["batch"]["Count"] == 1
    assert time["train,frame"]["epoch"]["Count"] == 1 and time["event"]["load"]["Count"] == 1
    mx.profiler.dump()
    events = json.load(open("profile.json"))["traceEvents"]
    assert [e["args"]["seen"] for e in events if e["ph"] == "C"] == [8, 7]
    assert [(e["name"], e["s"]) for e in events if e["ph"] == "i"] == [("here", "t")]
    with pytest.raises(mx.MXNetError, match="stopped before it started"):
        mx.profiler.Event("never").stop()
    with pytest.raises(mx.MXNetError, match="scope must be one of"):
        mx.profiler.Marker(domain, "m").mark("everywhere")


def test_table_layout_sorting_and_reset():
    mx.profiler.set_state("run")
    x = mx.nd.ones((3,))
    for _ in range(3):
        x = x * 2
    x.sum()
    mx.profiler.set_state("stop")
    table = mx.profiler.dumps(sort_by="count")
    lines = table.split("\n")
    assert lines[:3] == ["", "Profile Statistics:",
                         "\tNote the difference in units for different entries."]
    at = lines.index("operator")
    assert lines[at + 1:at + 3] == ["=================", TIME_HEADER]
    assert lines[at + 4].startswith("_mul_scalar") and lines[at + 4][30:41] == "          3"
    assert lines[at + 5].startswith("sum")
    ascending = mx.profiler.dumps(sort_by="count", ascending=True).split("\n")
    assert ascending[at + 4].startswith("sum")
    mx.profiler.dumps(reset=True)
    assert "operator" not in mx.profiler.dumps()
    mx.profiler.set_config(aggregate_stats=False)
    assert mx.profiler.dumps() == ""


def test_continuous_dump_writes_while_running():
    mx.profiler.set_config(continuous_dump=True, dump_period=0, filename="live.json")
    exe = _executor()
    mx.profiler.set_state("run")
    exe.forward()
    assert [e["name"] for e in json.load(open("live.json"))["traceEvents"]
            if e["ph"] == "X"] == ["FullyConnected", "Activation"]
    mx.profiler.set_state("stop")


def test_refusals():
    with pytest.raises(mx.MXNetError, match="run' or 'stop"):
        mx.profiler.set_state("going")
    with pytest.raises(mx.MXNetError, match="unknown option"):
        mx.profiler.set_config(profile_everything=True)
    with pytest.raises(mx.MXNetError, match="without server processes"):
        mx.profiler.set_state("run", profile_process="server")
    with pytest.raises(mx.MXNetError, match="'worker' or 'server'"):
        mx.profiler.dump(profile_process="client")
    with pytest.raises(mx.MXNetError, match="invalid sort_by 'speed'"):
        mx.profiler.dumps(sort_by="speed")
    with pytest.raises(mx.MXNetError, match="'table' or 'json'"):
        mx.profiler.dumps(format="csv")


def test_deprecated_names():
    mx.profiler.profiler_set_config(mode="all", filename="old.json")
    assert mx.profiler.get_config()["profile_all"] is True
    mx.profiler.profiler_set_state("run")
    mx.nd.ones((2,)) * 3
    mx.profiler.profiler_set_state("stop")
    mx.profiler.dump_profile()
    assert any(e.get("name") == "_mul_scalar" for e in json.load(open("old.json"))["traceEvents"])


def test_defaults_record_everything_as_mxnet_does(monkeypatch):
    from minimod import profiler
    # a configuration that names none of the four switches, as a fresh process has
    monkeypatch.setattr(profiler, "_config", {"filename": "profile.json",
                                              "aggregate_stats": True})
    mx.profiler.set_state("run")
    exe = _executor()
    exe.forward()
    mx.profiler.set_state("stop")
    stats = _stats()
    assert set(stats["Time"]) == {"api", "operator"}
    assert "Memory: cpu/0" in stats["Memory"]["Device Storage"]
