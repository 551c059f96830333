"""Text as it enters failclass, read one way at every entry point (the service's JSON
bodies, the hook's facts and options, a log handed over as text): UTF-8, and what cannot
be decoded (invalid bytes) or encoded (a lone surrogate: a JSON "\\ud800", an undecodable
byte of a command-line argument) is kept as U+FFFD. Logs read as bytes (files, standard
input, raw request bodies) stay bytes; their evidence shows invalid bytes as U+FFFD too."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

REPLACEMENT = "\ufffd"
SURROGATE = re.compile("[\ud800-\udfff]")
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # where json.loads can make a lone surrogate


def encodable(value: Any) -> Any:
    """``value`` (a string, or parsed JSON: lists, dicts, scalars) with every surrogate in
    its strings and keys replaced by U+FFFD; any depth (no recursion); the input is not changed."""
    if isinstance(value, str):
        return SURROGATE.sub(REPLACEMENT, value)
    root = [value]
    pending: list[tuple[Any, Any]] = [(root, 0)]
    while pending:
        holder, key = pending.pop()
        item = holder[key]
        if isinstance(item, str):
            holder[key] = SURROGATE.sub(REPLACEMENT, item)
        elif isinstance(item, list):
            copied = list(item)
            holder[key] = copied
            pending.extend((copied, i) for i in range(len(copied)))
        elif isinstance(item, dict):
            fixed = {encodable(k) if isinstance(k, str) else k: v for k, v in item.items()}
            holder[key] = fixed
            pending.extend((fixed, k) for k in fixed)
    return root[0]


def utf8(text: str) -> bytes:
    """The text in UTF-8, each surrogate as U+FFFD (text without one, most, is encoded at once)."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return str(encodable(text)).encode()


class UnreadableJson(ValueError):
    """JSON that Python's reader gives up on: nested too deep, or a number too long."""


def read_json(data: bytes) -> Any:
    """A JSON document as failclass reads one: UTF-8 (a leading BOM skipped), what cannot be
    decoded or encoded kept as U+FFFD. Raises json.JSONDecodeError where it is not JSON and
    UnreadableJson where it nests too deep or holds an integer of too many digits."""
    text = data.decode("utf-8-sig", "replace")
    try:
        value = json.loads(text)
    except RecursionError:
        raise UnreadableJson("the JSON nests too deeply for the reader (about 1,000 levels at most)") from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # Python refuses to convert integers of more digits than its limit
        raise UnreadableJson(f"a JSON number has more than {sys.get_int_max_str_digits()} digits") from None
    return encodable(value) if SURROGATE_ESCAPE.search(text) else value
