"""The command line: one module per command group, all thin over the library."""

from failclass.cli.main import main

__all__ = ["main"]
