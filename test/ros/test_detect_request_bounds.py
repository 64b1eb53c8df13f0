"""A detection request has bounds (`perception.base`: at most MAX_PHRASES phrases of at most
MAX_PHRASE_CHARS characters), refused with the reason before any backend runs, by the node's
`~/detect` and by `mango perception detect`; and the reasons of the unmatched phrases take one
pass over the messages (10,000 phrases once held the node for minutes: a scan of every message
per phrase)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rclpy.node import Node
from support.ros import Processes, call_service
from typer.testing import CliRunner

from mango.cli.main import app
from mango.perception.base import MAX_PHRASE_CHARS, MAX_PHRASES, DetectResult, phrases_problem
from mango.ros.detection_msg import unmatched_reasons
from mango_ros.srv import Detect


def _reasons_by_scanning(result: DetectResult) -> list[str]:
    """The rule, written as plainly as it reads (a scan of the messages per phrase)."""
    out = []
    for phrase in result.unmatched:
        said = [m for m in result.messages if m.startswith(f"'{phrase}'")]
        general = [m for m in result.messages if not m.startswith("'")]
        out.append("; ".join(said or general) or f"nothing matches '{phrase}'")
    return out


_words = st.text(alphabet="ab' ", min_size=0, max_size=6)


@settings(max_examples=300, deadline=None)
@given(phrases=st.lists(_words, max_size=6), extra=st.lists(_words, max_size=4),
       data=st.data())
def test_the_reasons_are_the_rules(phrases: list[str], extra: list[str],
                                   data: st.DataObject) -> None:
    """Messages naming asked phrases, phrases not asked, phrases holding quotes, none."""
    named = phrases + extra
    messages = data.draw(st.lists(st.one_of(
        st.sampled_from(named or ["x"]).map(lambda p: f"'{p}': {p} is not here"),
        st.sampled_from(named or ["x"]).map(lambda p: f"'{p}' and more"),
        _words), max_size=8))
    result = DetectResult((), tuple(phrases), tuple(messages))
    assert unmatched_reasons(result) == _reasons_by_scanning(result)


class _CountedMessages(tuple):
    """The messages, counting how often they are walked: a scan per phrase walks them once
    per phrase (the old rule, minutes for 10,000 phrases); one pass walks them once. Counted,
    not timed, so a loaded machine cannot change the answer."""

    walks = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        type(self).walks += 1
        return super().__iter__()


def test_the_reasons_of_many_phrases_take_one_pass() -> None:
    n = 20_000
    phrases = tuple(f"thing {i}" for i in range(n))
    messages = _CountedMessages(f"'{p}': no scene entity matches it" for p in phrases)
    _CountedMessages.walks = 0
    reasons = unmatched_reasons(DetectResult((), phrases, messages))
    assert reasons[123] == "'thing 123': no scene entity matches it" and len(reasons) == n
    assert _CountedMessages.walks == 1


def test_the_bounds_of_a_request() -> None:
    assert phrases_problem(["the bowl"] * MAX_PHRASES) is None
    assert phrases_problem(["b" * MAX_PHRASE_CHARS]) is None
    assert phrases_problem(["the bowl"] * 10_000) == (
        f"10000 phrases in one request; at most {MAX_PHRASES}")
    said = phrases_problem(["the bowl", "b" * 700_000])
    assert said is not None and said.startswith("phrase 2 is 700000 characters long ('bbb")
    assert said.endswith(f"a phrase has at most {MAX_PHRASE_CHARS}") and len(said) < 200


def test_the_command_refuses_them_before_building_the_scene() -> None:
    for phrases, says in [(["the bowl"] * (MAX_PHRASES + 1), "101 phrases in one request"),
                          (["b" * 700_000], "phrase 1 is 700000 characters long")]:
        res = CliRunner().invoke(app, ["perception", "detect", *phrases, "--scene",
                                       "no_such_scene"])
        assert res.exit_code == 2 and res.stderr.count("\n") == 1, res.stderr
        assert res.stderr.startswith("error: field 'PHRASES': ") and says in res.stderr


def test_the_node_answers_with_the_bound_and_goes_on(ros_node: Node, processes: Processes,
                                                     namespace: str) -> None:
    processes.start("perception", "mango.nodes.perception_node", "-r", f"__ns:={namespace}",
                    "-p", "backend:=sim", "-p", "cameras:=['front']")
    name = f"{namespace}/perception_node/detect"
    many = call_service(ros_node, Detect, name, Detect.Request(phrases=["a bowl"] * 10_000),
                        timeout=30)
    assert not many.success and many.message == (
        f"10000 phrases in one request; at most {MAX_PHRASES}")
    assert list(many.unmatched) == [] and list(many.detections) == []
    long = call_service(ros_node, Detect, name, Detect.Request(phrases=["b" * 700_000]))
    assert not long.success and "phrase 1 is 700000 characters long" in long.message
    usual = call_service(ros_node, Detect, name, Detect.Request(phrases=["the bowl"]))
    assert not usual.success and list(usual.unmatched) == ["the bowl"]  # no camera yet
    assert "at most" not in usual.message
