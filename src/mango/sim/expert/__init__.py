"""The scripted expert: task milestones (`milestones`), the planned arm and its chunks (`arm`),
motion primitives (`motions`: grasp, place, push), fixture skills (`fixtures`: drawer, door,
knob) and the task plan composing them (`policy.ExpertPolicy`). Faults are `mango.sim.faults`.
"""
