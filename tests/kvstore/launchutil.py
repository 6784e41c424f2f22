"""Run `python -m minimod.launch` from a test, bounded by a timeout that ends the whole job."""
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def launch(args, timeout=60.0, cwd=None, env=None):
    """(exit status, combined output, seconds) of `python -m minimod.launch ARGS`.

    On timeout the launcher gets SIGTERM (it then kills mpiexec's process group and every
    local rank); whatever is left of its own process group is SIGKILLed, and the test fails.
    """
    overrides = env
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.update(overrides or {})
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    t0 = time.time()
    proc = subprocess.Popen([sys.executable, "-m", "minimod.launch"] + list(args),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, env=env, cwd=cwd or ROOT)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
        raise AssertionError("the launched job did not end within %s s; output:\n%s"
                             % (timeout, out.decode(errors="replace"))) from None
    return proc.returncode, out.decode(errors="replace"), time.time() - t0
