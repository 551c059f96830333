"""failclass: classify failed GPU training attempts from their logs."""

from __future__ import annotations


def __getattr__(name: str) -> str:
    """``__version__``: the installed distribution's version, which pyproject.toml alone
    writes. Read when first asked, not on import: importlib.metadata adds 20 to 50 ms to a
    process, and a warm `hook decide` takes about 200 ms in all."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import version

    found = version("failclass")
    globals()["__version__"] = found
    return found
