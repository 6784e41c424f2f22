"""`python -m minimod.launch`: command building and hostfiles (no MPI needed), and, with the
`dist` extra, what happens to a job when a rank fails or stalls."""
import importlib.util
import sys
import textwrap

import pytest

from minimod import launch as L
from minimod.launch import command as launch_cmd
from tests.kvstore.launchutil import launch

needs_mpi = pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None,
                               reason="the dist extra (mpi4py) is not installed")


# ------------------------------------------------------------------------ without MPI

def test_hostfile_formats(tmp_path):
    f = tmp_path / "hosts"
    f.write_text("# cluster\nnode1\nnode2:4   # four slots\n\nnode3 slots=2\n")
    assert L.parse_hostfile(str(f)) == [("node1", 1), ("node2", 4), ("node3", 2)]


@pytest.mark.parametrize("line,what", [("node1:zero", "line 2"), ("node1 slots=0", "line 2"),
                                       ("node1 2 3", "line 2"), (":4", "line 2")])
def test_bad_hostfile_lines_are_named(tmp_path, line, what):
    f = tmp_path / "hosts"
    f.write_text("ok\n%s\n" % line)
    with pytest.raises(L.LaunchError, match=what):
        L.parse_hostfile(str(f))


def test_missing_or_empty_hostfile(tmp_path):
    with pytest.raises(L.LaunchError, match="cannot be read"):
        L.parse_hostfile(str(tmp_path / "absent"))
    (tmp_path / "empty").write_text("# nothing\n")
    with pytest.raises(L.LaunchError, match="names no host"):
        L.parse_hostfile(str(tmp_path / "empty"))


def test_python_commands_run_inside_the_rank_runner():
    py = sys.executable
    cmd = L.build_command("mpiexec", "mpich", 3, ["python", "-u", "train.py", "--lr", "1"])
    assert cmd == ["mpiexec", "-n", "3", py, "-u", "-m", "minimod.launch", "--_rank", "--",
                   "train.py", "--lr", "1"]
    assert L.build_command("mpiexec", "mpich", 2, ["train.py"])[3:] == \
        [py, "-m", "minimod.launch", "--_rank", "--", "train.py"]
    assert L.build_command("mpiexec", "mpich", 2, ["/opt/py/bin/python3", "-X", "dev", "-m",
                                                   "pkg.mod", "a"])[3:] == \
        ["/opt/py/bin/python3", "-X", "dev", "-m", "minimod.launch", "--_rank", "--", "-m",
         "pkg.mod", "a"]
    # anything else goes to mpiexec unchanged
    assert L.build_command("mpiexec", "mpich", 2, ["./a.out", "x"]) == \
        ["mpiexec", "-n", "2", "./a.out", "x"]


def test_hostfile_ports_and_iface_per_mpi_flavour():
    mpich = L.build_command("mpiexec", "mpich", 4, ["t.py"], hostfile="H", ports=(50000, 50100),
                            iface="eth1", env_names=("MINIMOD_LAUNCH_DIR",))
    assert mpich[:8] == ["mpiexec", "-n", "4", "-f", "H", "-iface", "eth1", sys.executable]
    ompi = L.build_command("mpirun", "openmpi", 4, ["t.py"], hostfile="H", ports=(50000, 50100),
                           iface="eth1", env_names=("MINIMOD_LAUNCH_DIR",))
    joined = " ".join(ompi)
    assert "--hostfile H" in joined and "-x MINIMOD_LAUNCH_DIR" in joined
    assert "btl_tcp_port_min_v4 50000" in joined and "btl_tcp_port_range_v4 101" in joined
    assert "btl_tcp_if_include eth1" in joined


@pytest.mark.parametrize("argv,message", [
    (["-n", "2"], "no COMMAND"),
    (["-n", "0", "--", "t.py"], "-n must be at least 1"),
    (["-n", "2", "--timeout", "-1", "--", "t.py"], "--timeout must be positive"),
    (["-n", "2", "--port-range", "80:90", "--", "t.py"], "1024 <= LO"),
    (["-n", "2", "--mpiexec", "/no/such/mpiexec", "--", "t.py"], "no such program"),
    (["-n", "2", "--", "python", "-u"], "runs no program"),
])
def test_bad_arguments_exit_2_with_a_message(capsys, argv, message):
    assert L.main(argv) == 2
    assert message in capsys.readouterr().err


def test_hostfile_is_rewritten_for_the_mpi(tmp_path):
    hosts = [("a", 2), ("b", 1)]
    assert open(launch_cmd._write_hostfile(hosts, "mpich", str(tmp_path))).read() == "a:2\nb:1\n"
    assert open(launch_cmd._write_hostfile(hosts, "openmpi", str(tmp_path))).read() == \
        "a slots=2\nb slots=1\n"


# ------------------------------------------------------------------------ with MPI

def _script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


@needs_mpi
def test_a_raising_rank_ends_the_job_in_seconds_with_the_error_shown(tmp_path):
    script = _script(tmp_path, "boom.py", """
        import minimod as mx
        kv = mx.kv.create("dist_sync")
        kv.barrier()
        if kv.rank == 1:
            raise ValueError("rank one gives up")
        kv.barrier()      # ranks 0 and 2 wait here for rank 1, which never comes
        print("never reached")
    """)
    rc, out, took = launch(["-n", "3", "--timeout", "120", "--", "python", script],
                           timeout=60)
    assert rc == 1, out
    assert 'raise ValueError("rank one gives up")' in out        # the rank's traceback
    assert "rank 1 of 3" in out and "ValueError: rank one gives up" in out
    assert "never reached" not in out and "past --timeout" not in out
    assert took < 30, took


@needs_mpi
def test_a_nonzero_sys_exit_in_one_rank_ends_the_job_with_its_status(tmp_path):
    script = _script(tmp_path, "quit.py", """
        import sys, minimod as mx
        kv = mx.kv.create("dist_sync")
        if kv.rank == 0:
            sys.exit(3)
        kv.barrier()
    """)
    rc, out, _ = launch(["-n", "2", "--", "python", script], timeout=60)
    assert rc == 3, out
    assert "rank 0 of 2" in out and "sys.exit(3)" in out


@needs_mpi
def test_a_stalled_rank_is_ended_by_the_timeout(tmp_path):
    script = _script(tmp_path, "stall.py", """
        import time, minimod as mx
        kv = mx.kv.create("dist_sync")
        kv.barrier()
        if kv.rank == 1:
            time.sleep(600)
        kv.barrier()
    """)
    rc, out, took = launch(["-n", "2", "--timeout", "3", "--", "python", script], timeout=60)
    assert rc == 124, out
    assert "past --timeout 3" in out
    assert "rank 0" in out and "waiting in kvstore collective #2 (barrier)" in out
    stalled = [line for line in out.splitlines() if "stalled?" in line]
    assert len(stalled) == 1 and "rank 1" in stalled[0], out
    assert took < 30, took


@needs_mpi
def test_the_stall_watchdog_ends_a_job_that_stops_making_progress(tmp_path):
    script = _script(tmp_path, "stall2.py", """
        import time, minimod as mx
        kv = mx.kv.create("dist_sync")
        kv.init("w", mx.nd.zeros((4,)))
        for step in range(5):             # steady progress first ...
            kv.push("w", mx.nd.ones((4,)))
            time.sleep(0.3)
        if kv.rank == 0:
            time.sleep(600)               # ... then rank 0 stops
        kv.barrier()
    """)
    rc, out, took = launch(["-n", "2", "--stall-timeout", "2.5", "--", "python", script],
                           timeout=60)
    assert rc == 124, out
    assert "--stall-timeout 2.5" in out
    stalled = [line for line in out.splitlines() if "stalled?" in line]
    assert len(stalled) == 1 and "rank 0" in stalled[0], out
    assert took < 30, took


@needs_mpi
def test_a_clean_job_passes_arguments_and_exits_0(tmp_path):
    script = _script(tmp_path, "hello.py", """
        import sys, minimod as mx
        kv = mx.kv.create("dist_sync")
        print("hello from %d of %d with %s" % (kv.rank, kv.num_workers, sys.argv[1:]))
    """)
    rc, out, _ = launch(["-n", "2", "--timeout", "60", "--", "python", script, "a", "--b"],
                        timeout=60)
    assert rc == 0, out
    for r in range(2):
        assert "hello from %d of 2 with ['a', '--b']" % r in out


@needs_mpi
def test_other_programs_go_to_mpiexec_unchanged():
    rc, out, _ = launch(["-n", "2", "--timeout", "60", "--", "echo", "plain program"],
                        timeout=60)
    assert rc == 0, out
    assert out.count("plain program") == 2


def test_rank_threads_share_the_cores_of_each_host():
    assert L.rank_threads(1, cores=8) == 8
    assert L.rank_threads(2, cores=2) == 1
    assert L.rank_threads(3, cores=2) == 1  # never below one
    assert L.rank_threads(4, [("a", 2), ("b", 2)], cores=8) == 4
    # the busiest host decides: 4 ranks over slots 1 and 3 put 3 ranks on host b
    assert L.rank_threads(4, [("a", 1), ("b", 3)], cores=6) == 2


@needs_mpi
@pytest.mark.parametrize("preset, expected", [("", None), ("3", "3")])
def test_ranks_get_a_share_of_the_blas_threads_unless_the_caller_set_them(
        tmp_path, preset, expected):
    script = _script(tmp_path, "threads.py", """
        import os
        from mpi4py import MPI
        print("rank %d threads %s" % (MPI.COMM_WORLD.Get_rank(), os.environ["OMP_NUM_THREADS"]))
    """)
    blank = {name: preset for name in launch_cmd._THREAD_VARS}
    rc, out, _ = launch(["-n", "2", "--timeout", "60", "--", "python", script], timeout=60,
                        env=blank)
    assert rc == 0, out
    expected = expected or str(L.rank_threads(2))
    for r in range(2):
        assert "rank %d threads %s" % (r, expected) in out


@pytest.mark.parametrize("root", [True, False])
def test_open_mpi_as_root_is_allowed_to_run(monkeypatch, root):
    """Open MPI's mpiexec refuses to run as root (containers, the GPU machines) unless given
    --allow-run-as-root; MPICH needs nothing."""
    monkeypatch.setattr(launch_cmd, "running_as_root", lambda: root)
    ompi = L.build_command("mpirun", "openmpi", 2, ["t.py"])
    assert ("--allow-run-as-root" in ompi) is root
    assert "--allow-run-as-root" not in L.build_command("mpiexec", "mpich", 2, ["t.py"])
