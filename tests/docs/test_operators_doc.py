"""docs/operators.md lists exactly the registered operators (regenerate it with
`python tools/operators_doc.py` after adding one)."""
import importlib.util
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
spec = importlib.util.spec_from_file_location("operators_doc",
                                              os.path.join(ROOT, "tools", "operators_doc.py"))
operators_doc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(operators_doc)


def test_operators_doc_is_current():
    with open(operators_doc.OUT) as f:
        assert f.read() == operators_doc.render()


def test_namespaced_operators_are_spelled_as_mxnet_code_writes_them():
    assert operators_doc.spelled("_contrib_ROIAlign") == "contrib.ROIAlign"
    assert operators_doc.spelled("_linalg_gemm2") == "linalg.gemm2"
    assert operators_doc.spelled("FullyConnected") == "FullyConnected"
