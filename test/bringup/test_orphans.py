"""A bringup killed without a chance to stop its nodes (SIGKILL: a timeout, the OOM killer)
takes them with it: each node asked the kernel for SIGTERM when its parent dies
(`mango.nodes.common.die_with_parent`). Seen before this: two whole sim stacks left running
for an hour after a walk step timed out, at a load of 15 on two cores."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent("""
    import sys, time
    from mango.bringup import Bringup
    from mango.stack import load_stack
    stack = load_stack("oracle").in_namespace(sys.argv[1])
    stack = stack.model_copy(update={"nodes": [n for n in stack.nodes
                                               if n.name == "oracle_node"]})
    b = Bringup(stack)
    b.start()
    print(" ".join(str(p.proc.pid) for p in b.procs), flush=True)
    time.sleep(600)
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by init) counts as gone
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_PDEATHSIG)")
def test_nodes_end_when_their_bringup_is_killed(tmp_path: Path) -> None:
    namespace = f"/orphan{os.getpid()}"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, namespace], stdout=subprocess.PIPE,
                            text=True, cwd=tmp_path)
    assert proc.stdout is not None
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert pids and all(_alive(p) for p in pids)
    time.sleep(1.0)  # the node is up (past die_with_parent)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in pids if _alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"nodes {left} outlived their bringup"
