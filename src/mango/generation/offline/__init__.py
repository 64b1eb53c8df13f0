"""The offline planner: every MANGO role played by deterministic rules (not a language model).

- `planner.OfflinePlanner`: the `LLMBackend` that dispatches each agent task to a rule;
- `module1`, `module2`, `module3`: the rules of each module (generate, assess, hack, judge);
- `checks`: Module III's logic, compliance and grounding checks; `plan`: plan building;
- `skills`: the robot skills, their effects and guards, and skill recognition;
- `lexicon` (+ `lexicon.json`), `grammar`, `respectively`, `parsing`, `references`,
  `matching`, `grounding`: reading an instruction and grounding it on a scene;
- `expressions`, `verdicts`: helpers the rules share.
"""
