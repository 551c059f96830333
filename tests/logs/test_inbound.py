"""Text that UTF-8 cannot hold is kept as U+FFFD, one way for every entry point: lone
surrogates (a JSON "\\ud800", an argument's undecodable bytes) and invalid bytes in JSON;
JSON that Python's reader gives up on is one clear error."""

from __future__ import annotations

import json

import pytest

from failclass.classifier import Classifier
from failclass.inbound import UnreadableJson, encodable, read_json

OOM = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.35 GiB total capacity)"


def test_surrogates_become_replacement_characters_at_any_depth() -> None:
    given = {"job\ud800": ["a\udcff", {"k": "\ud83d"}], "n": 1, "ok": "é"}
    assert encodable(given) == {"job\ufffd": ["a\ufffd", {"k": "\ufffd"}], "n": 1, "ok": "é"}
    assert given["job\ud800"] == ["a\udcff", {"k": "\ud83d"}]  # the input is left as it was
    deep: list[object] = []
    innermost = deep
    for _ in range(20_000):  # far deeper than Python's recursion limit
        innermost.append([])
        innermost = innermost[0]  # type: ignore[assignment]
    innermost.append("\udc80")
    replaced = encodable(deep)
    for _ in range(20_000):
        replaced = replaced[0]
    assert replaced == ["\ufffd"]


def test_json_is_read_as_utf8_with_what_it_cannot_hold_replaced() -> None:
    assert read_json(b'{"log": "\\ud800 x", "pair": "\\ud83d\\ude00"}') == {"log": "\ufffd x", "pair": "\U0001f600"}
    assert read_json('{"log": "é"}'.encode()) == {"log": "é"}
    assert read_json(b'{"log": "\xed\xa0\x80 \xff"}') == {"log": "\ufffd\ufffd\ufffd \ufffd"}
    assert read_json(b'\xef\xbb\xbf["bom"]') == ["bom"]
    with pytest.raises(json.JSONDecodeError):
        read_json(b"{")
    with pytest.raises(UnreadableJson, match="nests too deeply"):
        read_json(b"[" * 1000 + b"]" * 1000)
    with pytest.raises(UnreadableJson, match="more than 4300 digits"):
        read_json(b'{"gpus": ' + b"1" * 5000 + b"}")


def test_a_log_given_as_text_is_classified_whatever_it_holds(classifier: Classifier) -> None:
    escaped = classifier.classify_bytes(f"\ud800 {OOM}\n")
    from_bytes = classifier.classify_bytes(f"\xed\xa0\x80 {OOM}\n".encode("latin-1"))
    assert escaped.reason == from_bytes.reason == "gpu_oom"
    assert escaped.evidence[0].text.startswith("\ufffd RuntimeError")
    assert from_bytes.evidence[0].text.startswith("\ufffd\ufffd\ufffd RuntimeError")
