"""Runs that would not end: a step budget (p.CompileConfig(max_steps=...), generous by
default) stops them with an error naming the kernel and the loop, and Ctrl-C
(KeyboardInterrupt) stops them promptly."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import pypto as p

SPIN = '''
import numpy as np
import pypto as p

@p.block_kernel(grid=1, core="vector", out_shape=lambda x: x.shape, out_dtype=lambda x: x.dtype)
def spin(x, y):
    for i in p.range(1 << 40):
        t = p.load(x[0:8, :])
        p.store(y[0:8, :], t * 2.0)
'''


def _spin():
    ns = {}
    exec(compile(SPIN, "<spin>", "exec"), ns)
    return ns["spin"]


def test_the_step_budget_names_the_kernel_and_the_loop():
    f = p.compile(lambda a: p.call_kernel(_spin(), a), p.CompileConfig(max_steps=5000))
    with pytest.raises(p.DeviceError) as ei:
        f.run(np.ones((8, 64), np.float32))
    msg = str(ei.value)
    assert "kernel spin" in msg and "exceeds its budget of 5000 executed instructions" in msg, msg
    assert "in the loop at" in msg and "of 1099511627775" in msg, msg
    assert "max_steps" in msg, msg  # says how to raise it
    assert ei.value.location.file == __file__


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "100"])
def test_max_steps_is_validated(bad):
    with pytest.raises((ValueError, TypeError), match="max_steps"):
        p.CompileConfig(max_steps=bad)


@pytest.mark.parametrize("device", ["a2", "reference"])
def test_ctrl_c_stops_a_long_run_promptly(device):
    # The child takes SIGINT as a fresh terminal program would, whatever disposition
    # or mask it inherits from the test process (which has run the library for a while).
    child = "import signal\nsignal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])\n" \
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n" + SPIN + textwrap.dedent(f'''
        import faulthandler, signal, sys, time
        faulthandler.register(signal.SIGUSR1)  # the test asks for the stack if it hangs
        p.set_device({device!r})
        y = p.call_kernel(spin, np.ones((8, 64), np.float32))
        print("running", flush=True)
        try:
            y.numpy()
        except KeyboardInterrupt:
            print("KeyboardInterrupt", flush=True)
            sys.exit(0)
        print("finished", flush=True)
        sys.exit(3)
    ''')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "running", proc.stderr.read()
        time.sleep(3.0)  # well inside the run (the kernel runs for minutes)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGUSR1)
            time.sleep(1.0)
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the run did not stop within 60 s of SIGINT; its output:\n{out}\n{err}")
        took = time.monotonic() - sent
    finally:
        proc.kill()
    assert proc.returncode == 0 and "KeyboardInterrupt" in out, (proc.returncode, out, err)
    assert took < 3.0, f"the run took {took:.2f} s to stop after SIGINT"
