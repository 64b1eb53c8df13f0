"""The orchestrator (issue #16, after VoLo): plan a task into atomic subgoals, run them through
interruptible tools in the embedded sim, monitor, halt and recover. No rclpy here."""
