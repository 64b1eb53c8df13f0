"""Chat prompts for every MANGO agent task.

A prompt is a system message (the agent's profile and the rules of its aspect) and a user
message with the inputs as labelled JSON blocks and the exact answer format. The same inputs
travel as `AgentCall.context`, so a non-model backend answers the same request.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

_SYNTAX = (
    "Predicate expressions use the syntax: predicate(arg, ...) combined with 'and', 'or', "
    "'not' and parentheses; arguments are entity ids or parameter names, never quoted."
)

_PROFILES = {
    "generator": "You are the Generator of MANGO, a system that writes fine-grained test oracles "
    "for robot manipulation tasks. You propose candidates and refine them from feedback.",
    "assessor": "You are an Assessor of MANGO. You check one aspect of a candidate and report "
    "concrete issues (each one sentence naming the offending item and the fix) and a score "
    "from 0 (unusable) to 10 (no issue). Report no issue you cannot point at.",
    "judge": "You are the Judge of MANGO. You read a candidate and all assessor reports and "
    "decide APPROVED or REJECTED. Reject when any report names a real problem; then give "
    "refinement instructions the Generator can follow.",
    "hacker": "You are the Oracle Hacker of MANGO. You look for world states in which an atomic "
    "oracle evaluates to true although the task was NOT done (e.g. an object lifted by "
    "being knocked, not grasped).",
    "interpreter": "You are the Report Interpreter of MANGO. You turn a rejection (judge verdict "
    "and assessor reports) into a short, ordered list of concrete changes for the next "
    "candidate, dropping duplicates and anything already satisfied.",
}

_TASKS: dict[str, str] = {
    "module1.generate": "Write the atomic task library for the instructions: every skill the "
    "instructions need, one atomic action each (a composite such as 'put' is pick + place), "
    "parameterized by object ids (use parameter names such as obj_id and target_id), with "
    "pre- and post-conditions as predicate expressions over the parameters. "
    "Cover every instruction; no unused or duplicate tasks.",
    "module1.assess.atomicity": "Aspect ATOMICITY: every task must be one atomic skill. Flag "
    "composite tasks (e.g. 'put' = pick + place) and say how to split them.",
    "module1.assess.redundancy": "Aspect REDUNDANCY: flag tasks no instruction needs and tasks "
    "with the same effect as another. Inverse tasks (open/close, turn on/off) are NOT "
    "redundant.",
    "module1.assess.repetition": "Aspect REPETITION: flag tasks that have the same effect under "
    "different names or differ only by the object they act on; they must become one "
    "parameterized task.",
    "module1.judge": "Approve only if the library covers every instruction and no assessor "
    "reports a real problem.",
    "module1.interpret": "Turn the verdict and reports into changes to the task library.",
    "module2.generate": "Write the correctness oracle of ONE atomic task: a predicate "
    "expression over the task's parameters that holds exactly when the task was done, using "
    "only predicates of the function library with their arities.",
    "module2.generate_library": "Write the atomic task oracle library: for each atomic task a "
    "correctness oracle over its parameters, using only the function library's predicates.",
    "module2.hack": "Find a world state in which the oracle is true although the task was not "
    "done. Say exploit_found=false if the oracle is tight.",
    "module2.judge": "Judge the whole oracle library: consistent parameter names, predicates "
    "that exist with the right arity, one oracle per task, unified predicates.",
    "module3.generate": "Write the fine-grained oracle for the instruction: a plan of steps "
    "(execution_mode sequential or any_order) whose actions come from the atomic task library, "
    "with parameters grounded to scene ids, each monitored by the library's correctness oracle "
    "with the parameters substituted (handle_as). Use only ids of the scene; where a predicate "
    "needs a region (in, on a stove) use the region id.",
    "module3.assess.logic": "Aspect LOGIC: the order of actions must be right (pick before place, "
    "place before closing the container); independent sub-goals should be any_order.",
    "module3.assess.compliance": "Aspect COMPLIANCE: every action must be monitored; oracle_id "
    "must name a library oracle; handle_as must be that oracle's correctness_oracle with the "
    "action's parameters substituted (never just the oracle id).",
    "module3.assess.grounding": "Aspect GROUNDING: every id in parameters and handle_as must "
    "exist in the scene; predicates that need regions must get regions.",
    "module3.judge": "Approve only if no assessor (including Execution Reliability) reports a "
    "real problem.",
    "module3.interpret": "Turn the verdict and reports into changes to the oracle.",
}

_ORACLE_EXAMPLE = """Example of the answer's form (another scene; use only ids of YOUR scene):
{"instruction":"put both the soup and the sauce in the basket","execution_mode":"any_order",\
"plan":[{"step":1,"execution_mode":"sequential","actions":[\
{"action_id":"pick_up","parameters":{"obj_id":"soup_1"},"monitoring":[{"oracle_id":"pick_up",\
"handle_as":"grasped(soup_1) and up(soup_1)"}]},{"action_id":"place_in","parameters":\
{"obj_id":"soup_1","target_id":"basket_1_contain_region"},"monitoring":[{"oracle_id":\
"place_in","handle_as":"in(soup_1, basket_1_contain_region) and not grasped(soup_1)"}]}]},\
{"step":2,"execution_mode":"sequential","actions":["... the same for sauce_1 ..."]}]}
Another (a scene whose alike cups are told apart as "the left cup": cup_2, and whose table \
has a region beside the plate): {"instruction":"place the left cup on the plate and the \
spoon to the right of the plate","execution_mode":"any_order","plan":[{"step":1,\
"execution_mode":"sequential","actions":[{"action_id":"pick_up","parameters":{"obj_id":\
"cup_2"},"monitoring":[{"oracle_id":"pick_up","handle_as":"grasped(cup_2) and up(cup_2)"}]},\
{"action_id":"place_on","parameters":{"obj_id":"cup_2","target_id":"plate_1"},"monitoring":\
[{"oracle_id":"place_on","handle_as":"on(cup_2, plate_1) and not grasped(cup_2)"}]}]},\
{"step":2,"execution_mode":"sequential","actions":["... pick_up spoon_1, then place_on with \
target_id table_plate_right_region ..."]}]}
A thing goes ON a plate or a board (place_on), IN a basket, a drawer or a compartment (place_in, \
on its region), and beside something onto the table's region named for that side."""

# context keys shown to the model, in order, with their labels. What stays the same across
# a run's calls (the function and task libraries) comes first and what changes per task last:
# a llama.cpp server reuses the prompt prefix it has already evaluated, and on a CPU prompt
# evaluation is most of a call (a 1.5B model: ~2,400 prompt tokens against ~240 answered).
_SECTIONS = [
    ("functions", "Function library (predicates and their arguments)"),
    ("atomic_library", "Atomic task library"),
    ("atomic_oracle_library", "Atomic task oracle library"),
    ("instructions", "Instructions"),
    ("instruction", "Instruction"),
    ("scene", "Scene (ids a predicate may take; descriptions say how people call them)"),
    ("layout_words", "Alike things told apart by where they stand"),
    ("referents", "What the instruction's phrases name here (the scene reader's grounding: "
                  "use these ids and places)"),
    ("task", "Atomic task"),
    ("oracle", "Oracle under attack"),
    ("candidate", "Candidate"),
    ("reports", "Assessor reports"),
    ("verdict", "Judge verdict"),
    ("previous", "Your previous candidate"),
    ("feedback", "Feedback to address"),
    ("history", "Earlier rejected candidates (do not repeat their mistakes)"),
]


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items()
                if k not in {"title", "description"} or not isinstance(v, str)}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def _schema_hint(schema: type[BaseModel]) -> str:
    """The answer's JSON schema without titles (small models have small contexts). A schema
    grounded on one scene names the plain model it narrows (`prompt_model`): its ids are
    in the request's scene, a server that takes the schema enforces them, and a system
    message without them is the same for every task of a run, so a llama.cpp server
    evaluates it once (a LIBERO scene's enums and id patterns were ~2k tokens per call).
    A server that cannot take the schema gets the grounded one as a note instead."""
    shown = getattr(schema, "prompt_model", schema)
    return json.dumps(_strip_titles(shown.model_json_schema()), separators=(",", ":"))


def build_messages(
    task: str, context: dict[str, Any], schema: type[BaseModel]
) -> list[dict[str, str]]:
    """System + user messages for one agent task."""
    role = task.split(".")[1] if "." in task else "generator"
    role = {"generate": "generator", "generate_library": "generator", "assess": "assessor",
            "judge": "judge", "hack": "hacker", "interpret": "interpreter"}.get(role, role)
    system = "\n".join([_PROFILES.get(role, _PROFILES["generator"]), _SYNTAX,
                        "Answer with one JSON object only, matching this JSON schema:",
                        _schema_hint(schema)])
    parts = [_TASKS.get(task, task)]
    if task == "module3.generate":
        parts.append(_ORACLE_EXAMPLE)
    for key, label in _SECTIONS:
        if key in context and context[key] not in (None, [], {}, ""):
            value = context[key]
            text = value if isinstance(value, str) else json.dumps(
                value, separators=(",", ":"), ensure_ascii=False)
            parts.append(f"## {label}\n{text}")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def read_messages(messages: list[dict[str, str]]) -> tuple[str | None, dict[str, Any]]:
    """Recover (task, context) from a prompt `build_messages` wrote.

    The inverse shows that a prompt carries every input an agent needs; it lets a
    chat-completions server answer with the offline planner in end-to-end tests.
    """
    user = next((m["content"] for m in messages if m.get("role") == "user"), "")
    parts = user.split("\n\n## ")
    head = parts[0]
    task = next((t for t, text in _TASKS.items() if head.startswith(text)), None)
    labels = {label: key for key, label in _SECTIONS}
    context: dict[str, Any] = {}
    for part in parts[1:]:
        label, _, body = part.partition("\n")
        key = labels.get(label.removeprefix("## "))
        if key is None:
            continue
        try:
            context[key] = json.loads(body)
        except json.JSONDecodeError:
            context[key] = body
    return task, context
