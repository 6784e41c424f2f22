"""benchmarks/profile_steps.py: the profile times every op step the training step runs."""
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import profile_steps  # noqa: E402


def test_every_forward_and_backward_node_is_timed_inside_the_training_step():
    """Module.forward_backward runs the executor's one list of steps: each node the profile
    labels must be timed there, once per step, or its time would land in 'framework'."""
    mod, executors, _, clock, n = profile_steps._instrumented(
        "mlp", 4, 0.05, lambda direction, node: "%s %s" % (direction, node.name),
        timing=lambda step: step())
    labels = {key for key in clock.total if key not in ("blas", "update")}
    assert n > 0 and "update" in clock.total
    (exe,) = executors
    assert len(labels) == len(exe._steps.train) == 12
    assert any(key.startswith("backward") for key in labels)


def test_tiny_overhead_times_the_module_step_against_its_own_kernels_and_hand_steps():
    """The per-step overhead table: every comparison is present, the kernels peer runs all 12
    op steps of the tiny MLP, and the text reports minimod's own cost as module - kernels."""
    t = profile_steps.tiny_overhead(0.02)
    assert t["nodes"] == 12
    for peer in ("kernels", "hand", "hand_flat"):
        assert t[peer] > 0 and t["module_vs_" + peer] > 0
    text = profile_steps.tiny_overhead_text(t)
    assert "**%.1f**" % (t["module_vs_kernels"] - t["kernels"]) in text
