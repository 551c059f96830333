"""failclass: classify failed GPU training attempts from their logs."""

__version__ = "0.1.0"
