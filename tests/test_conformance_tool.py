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


def test_gpu_context_report_says_what_gpu0_was_and_has_no_cpu_headline(tmp_path):
    wanted = conformance.read_baseline(_kit(tmp_path))
    results = {n: ("passed", "") for n in wanted}
    report = tmp_path / "report-gpu.md"
    conformance.write_report(str(report), ["test_a.py", "test_b.py"], wanted, results, {},
                             where="the NumPy stand-in for CuPy")
    text = report.read_text()
    assert text.startswith("# MXNet 1.9.1's own unit tests on minimod, on gpu(0)")
    assert "**on gpu(0): 3 of 3**" in text and "gpu(0) was the NumPy stand-in" in text
    assert "conformance:" not in text  # the CPU report's line is docs/conformance.md's alone


def test_gpu_site_makes_gpu0_the_default_context_of_a_fresh_interpreter(tmp_path):
    """The sitecustomize that --context gpu puts on the kit's path: in a new interpreter
    without a GPU, the stand-in becomes gpu(0), the default context is gpu(0), and it says
    where the tests ran."""
    import subprocess
    import sys
    site = conformance.gpu_site(str(tmp_path))
    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=site, MINIMOD_KIT_CONTEXT="gpu", OUT=str(out))
    env.pop("MINIMOD_FAKE_CUPY", None)
    code = ("import minimod as mx; from minimod.test_utils import default_context; "
            "print(default_context(), mx.nd.ones((2,)).context)")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["gpu(0)", "gpu(0)"]
    where = (out / "context.txt").read_text()
    assert where.startswith("the NumPy stand-in") or where.startswith("a real GPU"), where
