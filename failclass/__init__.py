"""failclass: classify failed GPU training attempts from their logs."""

from __future__ import annotations


def __getattr__(name: str) -> str:
    """``__version__``: the installed distribution's version, which pyproject.toml alone
    writes. Read when first asked, not on import: importlib.metadata costs a process about
    40 ms, a quarter of a warm `hook decide`."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import version

    found = version("failclass")
    globals()["__version__"] = found
    return found
