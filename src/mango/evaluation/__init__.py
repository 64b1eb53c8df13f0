"""Evaluation: campaigns of episodes, their statistics and reports (issue #17)."""
