"""`mx.kv.create(name)`: every MXNet name of a single-process store, and what it reports."""
import pytest

import minimod as mx


@pytest.mark.parametrize("name, kind", [
    ("local", "local"), ("local_update_cpu", "local"), ("local_allreduce_cpu", "local"),
    ("device", "device"), ("local_allreduce_device", "device"), ("nccl", "nccl")])
def test_type_is_the_name_asked_for_and_kind_how_it_sums(name, kind):
    kv = mx.kv.create(name)
    assert kv.type == name and kv.kind == kind


def test_an_aliased_store_still_sums():
    kv = mx.kv.create("local_allreduce_cpu")
    kv.init("w", mx.nd.zeros((2,)))
    kv.push("w", [mx.nd.ones((2,), ctx=mx.cpu(0)), mx.nd.ones((2,), ctx=mx.cpu(1))])
    out = mx.nd.zeros((2,))
    kv.pull("w", out=out)
    assert out.asnumpy().tolist() == [2.0, 2.0]
