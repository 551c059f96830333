"""The command-line contracts of DESIGN.md, through the real command."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from conftest import ROOT, run_cli

import failclass

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity)\n"
CONTRACT_KEYS = {"path", "reason", "reason_name", "categories", "source", "rule_id", "confidence", "evidence"}


def test_classify_json_contract(tmp_path: Path) -> None:
    log = tmp_path / "attempt-1.log"
    log.write_text("epoch 1 step 100 loss 2.3\n" + OOM)
    done = run_cli("classify", "--json", str(log))
    assert done.returncode == 0, done.stderr
    (row,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert row.keys() >= CONTRACT_KEYS
    assert row["path"] == str(log)
    assert row["reason"] == "gpu_oom" and row["reason_name"] == "GPU out of memory"
    assert row["categories"] == ["U"] and row["source"] == "signature"
    assert row["rule_id"].startswith("gpu_oom.") and 0 < row["confidence"] <= 1
    assert row["evidence"] == [{"line": 2, "text": OOM.strip()}]


def test_no_signature_and_stdin() -> None:
    done = run_cli("classify", "--json", "-", stdin=b"epoch 1 done\nall good\n")
    row = json.loads(done.stdout)
    assert (row["reason"], row["source"], row["rule_id"], row["evidence"]) == ("no_signature", "none", None, [])
    assert row["categories"] == []


def test_unreadable_file_gives_error_object_and_exit_1_others_still_classified(tmp_path: Path) -> None:
    good = tmp_path / "good.log"
    good.write_text(OOM)
    done = run_cli("classify", "--json", str(tmp_path / "nope.log"), str(good))
    assert done.returncode == 1
    first, second = (json.loads(line) for line in done.stdout.splitlines())
    assert first["path"].endswith("nope.log") and "error" in first
    assert second["reason"] == "gpu_oom"


def test_human_output_and_summary(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text(OOM)
    (tmp_path / "b.log").write_text("fine\n")
    done = run_cli("classify", str(tmp_path / "a.log"), str(tmp_path / "b.log"))
    assert done.returncode == 0
    assert "a.log: GPU out of memory [U]" in done.stdout
    assert "    line 1: torch.OutOfMemoryError" in done.stdout
    assert "b.log: No signature [-]" in done.stdout
    assert "2 log(s): 2 classified, 0 unreadable" in done.stdout


def test_explain_lists_losing_rules(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text(OOM + 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n')
    done = run_cli("classify", "--json", "--explain", str(log))
    row = json.loads(done.stdout)
    assert row["reason"] == "gpu_oom"
    assert all("lost_because" in other for other in row["also_matched"])


def test_the_version_is_pyprojects_number() -> None:
    written = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert failclass.__version__ == written
    done = run_cli("--version")
    assert (done.returncode, done.stdout) == (0, f"failclass, version {written}\n")


def test_usage_error_exits_2() -> None:
    assert run_cli("classify").returncode == 2
    assert run_cli("classify", "--no-such-flag", "x").returncode == 2


def test_broken_operator_rules_exit_2_with_file_named(tmp_path: Path) -> None:
    (tmp_path / "gpu_oom.yaml").write_text("reason: gpu_oom\nrules:\n  - id: gpu_oom.x\n    kind: sometimes\n")
    done = run_cli("--rules-dir", str(tmp_path), "classify", "-", stdin=b"x\n")
    assert done.returncode == 2
    assert "gpu_oom.yaml: rule gpu_oom.x: field 'kind'" in done.stderr


def test_rules_list_json_has_every_rule() -> None:
    done = run_cli("rules", "list", "--json")
    assert done.returncode == 0
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) >= 230
    assert len({r["id"] for r in rows}) == len(rows)
    for row in rows:
        assert {"id", "reason", "kind", "patterns"} <= row.keys() and row["kind"] in ("explicit", "implicit")
        assert row["patterns"] or row["exception"]["types"]  # a literal rule, or one over a raised exception


def test_rules_test_and_strict_lint_pass() -> None:
    tested = run_cli("rules", "test")
    assert tested.returncode == 0, tested.stdout[-3000:]
    assert tested.stdout.strip().endswith("0 failures")
    linted = run_cli("rules", "lint", "--strict")  # warnings fail too: the shipped rules have none
    assert linted.returncode == 0, linted.stdout[-3000:]
    assert linted.stdout.strip().endswith(": 0 errors, 0 warnings")


def test_global_options_are_accepted_after_the_command_too(tmp_path: Path) -> None:
    """`classify --no-model LOG` means `--no-model classify LOG`; values travel with their
    option, in both spellings; after "--" nothing is an option."""
    holdout = "corpora/holdout/import_error/torchrun_tensorboard_module_missing.log"  # only the model names it
    assert json.loads(run_cli("classify", "--json", holdout).stdout)["source"] == "model"
    for args in (("classify", "--no-model", "--json", holdout), ("classify", "--json", holdout, "--no-model")):
        done = run_cli(*args)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["source"] == "none"
    (tmp_path / "gpu_oom.yaml").write_text("reason: gpu_oom\nrules:\n  - id: gpu_oom.x\n    kind: sometimes\n")
    for spelling in (("--rules-dir", str(tmp_path)), (f"--rules-dir={tmp_path}",)):
        done = run_cli("rules", "list", *spelling)
        assert done.returncode == 2 and "gpu_oom.yaml: rule gpu_oom.x: field 'kind'" in done.stderr
    done = run_cli("classify", "--json", "--", "--no-model")
    assert done.returncode == 1 and json.loads(done.stdout)["error"] == "--no-model: no such file"
    done = run_cli("classify", holdout, "--model")
    assert done.returncode == 2 and "Option '--model' requires an argument." in done.stderr
