"""Helpers shared by tests (on sys.path through pytest `pythonpath`)."""
