"""One execution per request id: what lets a client resend a reset whose reply DDS dropped."""

from __future__ import annotations

import threading
import time

import pytest

from mango.nodes.request_ids import OncePerRequestId


def test_copies_of_a_request_run_once_and_share_its_reply() -> None:
    once = OncePerRequestId()
    runs: list[str] = []
    started, release = threading.Event(), threading.Event()

    def slow_reset() -> str:
        runs.append("reset")
        started.set()
        release.wait(5)
        return f"reply {len(runs)}"

    replies: list[str] = []
    first = threading.Thread(target=lambda: replies.append(once.reply("a", slow_reset)))
    first.start()
    assert started.wait(5)
    copy = threading.Thread(target=lambda: replies.append(once.reply("a", slow_reset)))
    copy.start()  # arrives while the first still runs: it waits for that reply
    time.sleep(0.1)
    assert replies == []
    release.set()
    first.join(5)
    copy.join(5)
    assert replies == ["reply 1", "reply 1"] and runs == ["reset"]
    assert once.reply("a", slow_reset) == "reply 1"  # a late copy too
    assert once.reply("b", slow_reset) == "reply 2"  # another request runs
    assert once.reply("", slow_reset) == "reply 3"  # no id: every request runs
    assert once.reply("", slow_reset) == "reply 4"


def test_a_failed_request_may_run_again_and_old_ids_are_forgotten() -> None:
    once = OncePerRequestId(keep=2)
    calls = iter([RuntimeError("physics thread busy"), "ok"])

    def make() -> str:
        outcome = next(calls)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    with pytest.raises(RuntimeError, match="busy"):
        once.reply("a", make)
    assert once.reply("a", make) == "ok"  # nothing was answered the first time
    once.reply("b", lambda: "b")
    once.reply("c", lambda: "c")
    assert once.reply("a", lambda: "again") == "again"  # only the last two are kept
