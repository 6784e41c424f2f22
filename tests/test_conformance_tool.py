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


def test_report_lists_the_out_of_scope_tests_minimod_passes_too(tmp_path):
    kit = _kit(tmp_path)
    wanted, beyond = conformance.read_baseline(kit), conformance.read_beyond(kit)
    assert beyond == [("test_a.py::test_gluon", "out", "gluon")]
    results = {n: ("passed", "") for n in wanted}
    results["test_a.py::test_gluon"] = ("failed", "MXNetError: no gluon")
    report = tmp_path / "report.md"
    conformance.write_report(str(report), ["test_a.py", "test_b.py"], wanted, results, {},
                             beyond=beyond)
    text = report.read_text()
    assert "0 of the 1 tests outside the scope" in text
    assert ("The 1 that do not, with what stopped them:\n\n"
            "- `test_a.py::test_gluon` (out: gluon): failed: MXNetError: no gluon") in text
    results["test_a.py::test_gluon"] = ("passed", "")
    conformance.write_report(str(report), ["test_a.py", "test_b.py"], wanted, results, {},
                             beyond=beyond)
    text = report.read_text()
    assert "1 of the 1 tests outside the scope" in text
    assert "- `test_a.py::test_gluon` (out: gluon)" in text and "that do not, with" not in text
    conformance.write_report(str(report), ["test_b.py"], wanted, results, {}, beyond=beyond)
    assert "Beyond the scope" not in report.read_text()  # its file did not run


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


def test_kit_site_makes_gpu0_the_default_context_of_a_fresh_interpreter(tmp_path):
    """The sitecustomize that --context gpu puts on the kit's path: in a new interpreter
    without a GPU, the stand-in becomes gpu(0), the default context is gpu(0), and it says
    where the tests ran."""
    import subprocess
    import sys
    site = conformance.kit_site(str(tmp_path))
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


def test_shards_split_a_file_into_disjoint_parts_that_survive_restarts(tmp_path):
    """The shard plugin: N pytest processes run every test of a file once between them, and a
    test deselected (as run_file.py's restarts do) leaves the others in their shards."""
    import subprocess
    import sys
    (tmp_path / "site").mkdir()
    site = conformance.kit_site(str(tmp_path / "site"))
    tests = tmp_path / "test_many.py"
    tests.write_text("".join("def test_%d():\n    pass\n" % i for i in range(12)))

    def ran(i, n, *extra):
        env = dict(os.environ, PYTHONPATH=site, MINIMOD_KIT_SHARD="%d/%d" % (i, n))
        proc = subprocess.run([sys.executable, "-m", "pytest", str(tests), "-p",
                               "minimod_kit_shard", "-p", "no:cacheprovider", "-v", *extra],
                              env=env, capture_output=True, text=True, timeout=120,
                              cwd=str(tmp_path))
        assert proc.returncode in (0, 5), proc.stdout + proc.stderr
        return {line.split("::")[1].split()[0] for line in proc.stdout.splitlines()
                if "::test_" in line and "PASSED" in line}
    parts = [ran(i, 3) for i in range(3)]
    assert set.union(*parts) == {"test_%d" % i for i in range(12)}
    assert sum(len(p) for p in parts) == 12 and sum(1 for p in parts if p) >= 2
    first = sorted(parts[0])[0]
    assert ran(0, 3, "--deselect", "test_many.py::" + first) == parts[0] - {first}


def test_main_merges_the_shards_results(tmp_path):
    """--shards N runs run_file.py N times with MINIMOD_KIT_SHARD set and merges what each
    wrote; a test one shard did not run counts where another ran it."""
    import sys
    kit = tmp_path / "kit"
    (kit / "tests" / "python" / "unittest").mkdir(parents=True)
    _kit(kit)
    (kit / "run_file.py").write_text(
        "import os, sys, zlib\n"
        "engine, name, out = sys.argv[1:4]\n"
        "assert sys.argv[4:] == ['--', '-p', 'minimod_kit_shard'], sys.argv\n"
        "i, n = map(int, os.environ['MINIMOD_KIT_SHARD'].split('/'))\n"
        "os.makedirs(os.path.join(out, engine), exist_ok=True)\n"
        "rows = [l.split('\\t')[0] for l in open(%r) if l.startswith(name)]\n"
        "with open(os.path.join(out, engine, name[:-3] + '.tsv'), 'w') as f:\n"
        "    for nid in rows:\n"
        "        mine = zlib.crc32(nid.encode()) %% n == i\n"
        "        f.write('%%s\\t%%s\\t0.1\\t\\n' %% (nid, 'passed' if mine else 'not_run'))\n"
        % str(kit / "baseline.tsv"))
    known, report = tmp_path / "known.txt", tmp_path / "report.md"
    known.write_text("")
    rc = conformance.main(["--kit", str(kit), "--python", sys.executable, "--shards", "3",
                           "--known", str(known), "--report", str(report), "test_a.py"])
    assert rc == 0
    assert "**conformance: 2 of 2**" in report.read_text()
