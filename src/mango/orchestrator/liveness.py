"""Whether the orchestrator's tool servers are still there (issue #41).

One rule for every server the loop calls (the VLA's `run_policy`, `grasp` / `place`, the
controller's `execute_chunk` and `halt`, perception's `detect`): a server that was seen and has
been missing for longer than a grace period is gone, and the call waiting on it ends at once
with `ToolServerLost`, which ends the task naming the server (retrying a dead server only
spends the recoveries). The rule knows nothing of ROS: a port gives it a "is it there now"
function, a "who serves it" function and a clock.

Why a grace: a process that dies is dropped from the graph when its DDS lease ends (4 s in the
project's DDS profiles), and a live server can read absent for a moment while discovery
catches up on a loaded machine; `SERVER_GRACE_S` more makes the answer certain. A server never
seen is not judged here: the caller's own wait for it to appear says when to give up.
"""

from __future__ import annotations

import time
from collections.abc import Callable

SERVER_GRACE_S = 2.0  # s a seen server may be missing before it counts as gone
NAME_RETRY_S = 1.0  # s between two looks for the serving node while it is unknown
# s a caller waits, once a server is there, for the graph to say which node serves it: a node's
# services reach the graph a moment after its endpoints match, and a server that dies in that
# moment must still be named
NAME_WAIT_S = 2.0


class ToolServerLost(Exception):
    """A tool server went away: the running call is over and the task ends, saying which."""

    def __init__(self, server: str, message: str) -> None:
        super().__init__(message)
        self.server = server
        self.message = message


class ServerWatch:
    """One tool server's presence on a clock: `check()` raises `ToolServerLost` once the
    server, seen before, has been missing for more than `grace` seconds.

    `present()` says whether it is there now; `serving_node()` names the node that serves it
    (asked while it is there, so the loss can name it); `clock` is monotonic seconds."""

    def __init__(self, server: str, present: Callable[[], bool],
                 serving_node: Callable[[], str | None] = lambda: None,
                 grace: float = SERVER_GRACE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not grace > 0:
            raise ValueError(f"grace must be positive (got {grace!r})")
        self.server = server
        self._present, self._serving_node = present, serving_node
        self.grace, self._clock = grace, clock
        self.seen = False
        self.node: str | None = None  # the node last seen serving it
        self._missing_since: float | None = None
        self._next_name = float("-inf")

    @property
    def label(self) -> str:
        """`vla_node's run_policy`, or `the run_policy server` while no node is known."""
        return f"{self.node}'s {self.server}" if self.node else f"the {self.server} server"

    def there(self) -> bool:
        """Look once: whether the server is there now (and learn who serves it)."""
        now = self._clock()
        if self._present():
            if self._missing_since is not None:  # back: a restarted node may be another one
                self.node, self._next_name = None, float("-inf")
            self.seen, self._missing_since = True, None
            if self.node is None and now >= self._next_name:
                self._next_name = now + NAME_RETRY_S
                self.node = self._serving_node() or None
            return True
        if self._missing_since is None:
            self._missing_since = now
        return False

    def named(self) -> bool:
        """Look for the serving node now (not paced): whether it is known. A caller about to
        use the server waits on this briefly, so that a loss right after is named."""
        if self.node is None and self._present():
            self.node = self._serving_node() or None
        return self.node is not None

    def lost(self) -> str | None:
        """Look once: why the server counts as gone, or None while it may still be there."""
        if self.there() or not self.seen:
            return None
        assert self._missing_since is not None
        missing = self._clock() - self._missing_since
        if missing <= self.grace:
            return None
        return f"{self.label} went away (not seen for {missing:.1f} s: did its node stop?)"

    def check(self) -> None:
        """Raise `ToolServerLost` when `lost()` says so."""
        why = self.lost()
        if why is not None:
            raise ToolServerLost(self.server, why)
