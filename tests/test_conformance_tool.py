"""tools/conformance.py: the report it writes and the regressions it reports, on a tiny fake
kit (the real kit runs in .ci/run)."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("conformance",
                                              os.path.join(ROOT, "tools", "conformance.py"))
conformance = importlib.util.module_from_spec(spec)
spec.loader.exec_module(conformance)


def _kit(tmp_path):
    (tmp_path / "baseline.tsv").write_text(
        "# header\n"
        "test_a.py::test_one\tpassed\tin\t\n"
        "test_a.py::test_two\tpassed\tin\t\n"
        "test_a.py::test_gluon\tpassed\tout\tgluon\n"
        "test_b.py::test_three\tpassed\tin\t\n"
        "test_b.py::test_flaky\tfailed\tin\t\n")
    return str(tmp_path)


def test_report_counts_in_scope_passes_and_names_each_failure_with_its_reason(tmp_path):
    wanted = conformance.read_baseline(_kit(tmp_path))
    assert wanted == ["test_a.py::test_one", "test_a.py::test_two", "test_b.py::test_three"]
    results = {"test_a.py::test_one": ("passed", ""),
               "test_a.py::test_two": ("failed", "AssertionError: boom"),
               "test_b.py::test_three": ("failed", "KeyError: x")}
    known = {"test_a.py::test_two": "an MXNet bug, not copied"}
    report = tmp_path / "report.md"
    new = conformance.write_report(str(report), ["test_a.py", "test_b.py"], wanted, results,
                                   known)
    text = report.read_text()
    assert new == ["test_b.py::test_three"]
    assert "**conformance: 1 of 3**" in text
    assert "| test_a.py | 1 | 2 |" in text and "| test_b.py | 0 | 1 |" in text
    assert "`test_a.py::test_two`: an MXNet bug, not copied" in text
    assert "not in the known-failures list) failed: KeyError: x" in text


def test_known_failures_file_reads_nodeids_and_reasons(tmp_path):
    path = tmp_path / "known.txt"
    path.write_text("# comment\ntest_a.py::test_two  # the reason\n\ntest_b.py::test_x\n")
    assert conformance.read_known(str(path)) == {"test_a.py::test_two": "the reason",
                                                "test_b.py::test_x": ""}


def test_the_project_known_failures_all_have_reasons():
    known = conformance.read_known(conformance.KNOWN)
    assert known and all(reason for reason in known.values())


def test_missing_kit_is_not_an_error(tmp_path, capsys):
    assert conformance.main(["--kit", str(tmp_path / "nowhere")]) == 0
    assert "no kit" in capsys.readouterr().out
