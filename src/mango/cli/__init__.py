"""The `mango` command line (typer). Each sub-command group lives in its own module."""
