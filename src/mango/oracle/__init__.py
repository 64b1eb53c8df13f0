"""Fine-grained oracles: predicate language, function library, static check, step tracking.

Pure Python (no ROS): the oracle node, `mango oracle`, `mango replay` and the generation
pipeline all call this API.
"""

from mango.oracle.compile import Condition, compile_expression
from mango.oracle.expr import (
    And,
    Atom,
    Const,
    Expr,
    ExpressionError,
    Not,
    Or,
    entities,
    format_expression,
    iter_atoms,
    parse_expression,
)
from mango.oracle.library import FunctionLibrary, PredicateSpec
from mango.oracle.model import (
    Action,
    FineGrainedOracle,
    Monitoring,
    PlanEntry,
    Step,
    load_oracle,
    plan_entries,
)
from mango.oracle.predicates import EvaluationError, StateView, Thresholds
from mango.oracle.static_check import Problem, SceneEntities, load_scene, static_check
from mango.oracle.symbolic import SymbolicOracle, SymbolicReport
from mango.oracle.tracker import Report, StepResult, StepTracker, TrackerEvent, check_trace
from mango.oracle.world_state import WorldState, read_trace

__all__ = [
    "Action",
    "And",
    "Atom",
    "Condition",
    "Const",
    "EvaluationError",
    "Expr",
    "ExpressionError",
    "FineGrainedOracle",
    "FunctionLibrary",
    "Monitoring",
    "Not",
    "Or",
    "PlanEntry",
    "PredicateSpec",
    "Problem",
    "Report",
    "SceneEntities",
    "StateView",
    "Step",
    "StepResult",
    "StepTracker",
    "SymbolicOracle",
    "SymbolicReport",
    "Thresholds",
    "TrackerEvent",
    "WorldState",
    "check_trace",
    "compile_expression",
    "entities",
    "format_expression",
    "iter_atoms",
    "load_oracle",
    "load_scene",
    "parse_expression",
    "plan_entries",
    "read_trace",
    "static_check",
]
