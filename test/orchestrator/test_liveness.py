"""The one rule for every orchestrator tool server (issue #41, class 5): a server seen and then
missing for longer than the grace is gone, and the loss names the node that served it; a
server never seen is not judged; a moment's absence is forgiven. On an injected clock and an
injected "is it there" function: no ROS, no sleeps."""

from __future__ import annotations

import pytest

from mango.orchestrator.liveness import SERVER_GRACE_S, ServerWatch, ToolServerLost


class Graph:
    """A fake graph: whether the server is there, who serves it, and the time."""

    def __init__(self) -> None:
        self.now = 100.0
        self.up = True
        self.node: str | None = "vla_node"
        self.asked = 0

    def serving(self) -> str | None:
        self.asked += 1
        return self.node

    def watch(self, grace: float = SERVER_GRACE_S) -> ServerWatch:
        return ServerWatch("run_policy", lambda: self.up, self.serving, grace,
                           clock=lambda: self.now)


def test_a_server_gone_past_the_grace_is_lost_naming_its_node() -> None:
    g = Graph()
    w = g.watch()
    assert w.lost() is None and w.node == "vla_node"
    g.up = False
    assert w.lost() is None  # the first look that misses it starts the grace
    g.now += SERVER_GRACE_S
    assert w.lost() is None  # not yet past it
    g.now += 0.01
    with pytest.raises(ToolServerLost) as err:
        w.check()
    assert err.value.server == "run_policy"
    assert str(err.value).startswith("vla_node's run_policy went away")
    assert f"{SERVER_GRACE_S + 0.01:.1f} s" in str(err.value)


def test_a_moments_absence_is_forgiven_and_the_grace_starts_again() -> None:
    g = Graph()
    w = g.watch(grace=1.0)
    w.check()
    g.up = False
    w.check()
    g.now += 0.9
    w.check()
    g.up = True  # discovery caught up on a loaded machine
    w.check()
    g.up = False
    g.now += 0.9
    w.check()  # a new absence: its own grace
    g.now += 0.9
    w.check()
    g.now += 0.2
    assert w.lost() is not None


def test_a_server_never_seen_is_left_to_the_callers_own_wait() -> None:
    g = Graph()
    g.up = False
    w = g.watch()
    g.now += 1000.0
    assert w.lost() is None and not w.seen and not w.there()
    assert g.asked == 0  # nobody to name


def test_the_serving_node_is_asked_once_and_again_after_it_came_back() -> None:
    g = Graph()
    w = g.watch()
    for _ in range(50):
        w.check()
        g.now += 0.02
    assert g.asked == 1
    g.up, g.node = False, None
    w.check()
    g.up, g.node = True, "vla_node_2"  # restarted under another name
    w.check()
    assert w.node == "vla_node_2" and g.asked == 2
    g.up = False
    w.check()
    g.now += SERVER_GRACE_S + 1.0
    assert w.lost() is not None and w.lost().startswith("vla_node_2's run_policy")


def test_an_unnamed_server_is_still_called_lost_and_the_name_is_asked_again_later() -> None:
    g = Graph()
    g.node = None  # the graph does not say (yet) who serves it
    w = g.watch()
    w.check()
    g.now += 0.5
    w.check()
    assert g.asked == 1  # not asked again within a second
    g.now += 1.0
    w.check()
    assert g.asked == 2 and w.node is None
    g.up = False
    w.check()
    g.now += SERVER_GRACE_S + 0.5
    assert w.lost() == "the run_policy server went away (not seen for 2.5 s: did its node stop?)"


def test_the_grace_must_be_positive() -> None:
    with pytest.raises(ValueError):
        ServerWatch("halt", lambda: True, grace=0.0)


def test_a_caller_about_to_use_a_server_learns_its_name_unpaced_so_a_loss_right_after_names_it(
        ) -> None:
    """The graph names a node's services a moment after its endpoints match: `named()` asks at
    once (the orchestrator waits on it before a goal), where `there()` asks once a second."""
    g = Graph()
    g.node = None
    w = g.watch()
    assert w.there() and w.node is None
    g.node = "vla_node"  # the graph caught up within the second
    assert w.named() and g.asked == 2
    assert w.named() and g.asked == 2  # known: not asked again
    g.up = False
    w.check()
    g.now += SERVER_GRACE_S + 0.5
    assert w.lost() == "vla_node's run_policy went away (not seen for 2.5 s: did its node stop?)"
    g2 = Graph()
    g2.up = False
    assert not g2.watch().named() and g2.asked == 0  # not there: nobody to ask about
