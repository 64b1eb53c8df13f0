"""MANGO generation: fine-grained oracles from natural-language instructions.

Modules I-III with Generator, Assessor, Judge, Oracle Hacker and Report Interpretation
agents behind any `mango.llm` backend (`pipeline.MangoPipeline`, `pipeline.make_pipeline`),
the rule-based Execution Reliability assessor (`reliability`), metrics (`metrics`),
task-set minimization (`minimize`) and the file-writing runners behind `mango generate`
(`runner`). The offline planner (`offline.planner.OfflinePlanner`) is a deterministic,
rule-based backend (instruction parsing, scene grounding and rule checks); it is not a
language model. `backends.make_backend` builds any backend by name, the offline planner
included.
"""
