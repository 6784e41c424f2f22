"""Graph.rebuilt, the one way the passes rewrite a graph: ops swapped, inputs given, nodes
dropped, entries redirected and new nodes inserted, with untouched nodes shared."""
from minimod.graph import Entry, Graph, Node
from minimod.ops.registry import create_op


def _chain():
    """x -> a = relu(x) -> b = exp(a) -> c = sin(b); y -> d = cos(y); outputs c and d."""
    x, y = Node(None, "x"), Node(None, "y")
    a = Node(create_op("relu"), "a", {}, [Entry(x)])
    b = Node(create_op("exp"), "b", {}, [Entry(a)])
    c = Node(create_op("sin"), "c", {}, [Entry(b)])
    d = Node(create_op("cos"), "d", {}, [Entry(y)])
    return Graph.from_heads([Entry(c), Entry(d)])


def _ids(graph):
    return {node.name: nid for nid, node in enumerate(graph.nodes)}


def test_nothing_changed_is_the_same_graph():
    g = _chain()
    assert g.rebuilt([n.op for n in g.nodes]) is g


def test_a_changed_op_copies_its_readers_and_shares_the_rest():
    g = _chain()
    ids = _ids(g)
    ops = [n.op for n in g.nodes]
    ops[ids["b"]] = create_op("tanh")
    new = g.rebuilt(ops)
    by_name = {n.name: n for n in new.nodes}
    assert by_name["b"].op.name == "tanh"
    assert by_name["c"] is not g.nodes[ids["c"]]  # reads a copied node
    assert by_name["c"].inputs[0].node is by_name["b"]
    for name in ("x", "y", "a", "d"):  # nothing they read changed
        assert by_name[name] is g.nodes[ids[name]]
    assert new.outputs[0].node is by_name["c"] and new.outputs[1].node is g.nodes[ids["d"]]


def test_inserted_nodes_stand_for_a_dropped_one():
    g = _chain()
    ids = _ids(g)
    a = g.nodes[ids["a"]]
    # b = exp(a) becomes t = tanh(a), u = exp(t); c reads u
    t = Node(create_op("tanh"), "t", {}, [Entry(a)])
    u = Node(create_op("exp"), "u", {}, [Entry(t)])
    new = g.rebuilt([n.op for n in g.nodes], drop={ids["b"]},
                    redirect={(ids["b"], 0): Entry(u)}, insert={ids["b"]: [t, u]})
    names = [n.name for n in new.nodes]
    # each node id's inserted nodes, then the node unless dropped
    expected = [n.name for n in g.nodes]
    at = expected.index("b")
    expected[at:at + 1] = ["t", "u"]
    assert names == expected
    c = new.nodes[names.index("c")]
    assert c.inputs[0].node is u and t.inputs[0].node is a


def test_inserted_nodes_follow_copies_of_what_they_read():
    g = _chain()
    ids = _ids(g)
    ops = [n.op for n in g.nodes]
    ops[ids["a"]] = create_op("sigmoid")  # a is copied, so t (reading a) must be too
    t = Node(create_op("tanh"), "t", {}, [Entry(g.nodes[ids["a"]])])
    new = g.rebuilt(ops, drop={ids["b"]}, redirect={(ids["b"], 0): Entry(t)},
                    insert={ids["b"]: [t]})
    by_name = {n.name: n for n in new.nodes}
    assert by_name["t"] is not t and by_name["t"].inputs[0].node is by_name["a"]
    assert by_name["a"].op.name == "sigmoid"
    assert by_name["c"].inputs[0].node is by_name["t"]


def test_a_redirected_output_reads_its_stand_in():
    g = _chain()
    ids = _ids(g)
    new = g.rebuilt([n.op for n in g.nodes], drop={ids["c"]},
                    redirect={(ids["c"], 0): Entry(g.nodes[ids["b"]])})
    assert "c" not in {n.name for n in new.nodes}
    assert new.outputs[0].node is g.nodes[ids["b"]]
