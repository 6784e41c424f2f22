"""mx.registry: the name tables behind mx.init.register / mx.metric.create, and the same helpers
for a user's own family of classes."""
import json
import subprocess
import sys

import pytest

import minimod as mx
from minimod import registry


class Shape:
    def __init__(self, size=1, colour="red"):
        self.size, self.colour = size, colour


class Square(Shape):
    pass


class Circle(Shape):
    pass


@pytest.fixture()
def shapes():
    register = registry.get_register_func(Shape, "shape")
    alias = registry.get_alias_func(Shape, "shape")
    create = registry.get_create_func(Shape, "shape")
    register(Square)
    alias("round", "disc")(Circle)
    yield register, create
    registry.table(Shape).clear()


def test_register_alias_and_get_registry(shapes):
    assert registry.get_registry(Shape) == {"square": Square, "round": Circle, "disc": Circle}
    copy = registry.get_registry(Shape)
    copy.clear()  # a copy: the table itself is untouched
    assert "square" in registry.get_registry(Shape)


def test_create_from_every_spec_form(shapes):
    _, create = shapes
    made = create("SQUARE", 3, colour="blue")
    assert type(made) is Square and (made.size, made.colour) == (3, "blue")
    assert create(shape="disc", size=2).size == 2
    assert create({"shape": "round", "size": 5}).size == 5
    assert create('["square", {"size": 7}]').size == 7
    assert create(json.dumps({"shape": "disc", "colour": "green"})).colour == "green"
    existing = Circle()
    assert create(existing) is existing


def test_create_refuses_what_it_cannot_make(shapes):
    _, create = shapes
    with pytest.raises(AssertionError, match="'triangle' is not registered.*square"):
        create("triangle")
    with pytest.raises(AssertionError, match="already a shape"):
        create(Circle(), 3)
    with pytest.raises(AssertionError, match="must be a name"):
        create(42)
    with pytest.raises(AssertionError, match="complete"):
        create('["square", {}]', 3)
    with pytest.raises(ValueError, match="not valid JSON"):
        create('["square", ')
    with pytest.raises(ValueError, match="must be"):
        create('["square", 1, 2]')
    with pytest.raises(TypeError, match="needs the shape"):
        create()


def test_register_refuses_other_classes_and_warns_on_a_taken_name(shapes):
    register, _ = shapes
    with pytest.raises(AssertionError, match="subclass of Shape"):
        register(int)
    with pytest.warns(UserWarning, match="overriding"):
        register(Circle, "square")
    assert registry.get_registry(Shape)["square"] is Circle


def test_the_initializers_and_metrics_are_in_the_tables():
    inits = registry.get_registry(mx.init.Initializer)
    assert inits["xavier"] is mx.init.Xavier and inits["zeros"] is mx.init.Zero
    metrics = registry.get_registry(mx.metric.EvalMetric)
    assert metrics["acc"] is mx.metric.Accuracy
    assert metrics["top_k_accuracy"] is mx.metric.TopKAccuracy

    @mx.init.register
    class Halves(mx.init.Initializer):
        def _init_weight(self, _, arr):
            arr[:] = 0.5

    try:
        assert registry.get_registry(mx.init.Initializer)["halves"] is Halves
        assert isinstance(mx.init.create("halves"), Halves)
    finally:
        del registry.table(mx.init.Initializer)["halves"]


def test_importing_minimod_registers_without_warnings():
    code = "import minimod as mx; mx.init.Xavier; mx.metric.Accuracy; mx.optimizer.SGD"
    result = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
