"""`failclass classify --attempt`: one answer for an attempt's logs, its origin and cascade."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ROOT, run_cli

DATA = ROOT / "tests" / "data" / "ranks"
TWO_NODES = [str(DATA / "torchrun_two_nodes" / name) for name in ("node-a.log", "node-b.log")]


def test_one_answer_with_origin_and_cascade(tmp_path: Path) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"job_id": "j-1", "nodes": ["node-a", "node-b"], "tasks_per_node": 4}))
    done = run_cli("classify", "--attempt", "--facts", str(facts), *TWO_NODES)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("attempt: Incorrect inputs [IF,U]")
    assert f"origin: rank 5 on node-b (GPU ?), {TWO_NODES[1]}:25" in lines
    assert lines[-1] == "cascade: 7 ranks (4 lost a peer, 3 reported by its launcher)"


def test_json_adds_origin_and_cascade_to_the_contract(tmp_path: Path) -> None:
    listed = tmp_path / "files.txt"
    listed.write_text("\n".join(str(p) for p in sorted((DATA / "srun_pertask").iterdir())) + "\n")
    done = run_cli("classify", "--attempt", "--json", "--files-from", str(listed))
    assert done.returncode == 0, done.stderr
    (row,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert row["reason"] == "incorrect_inputs" and row["cascade"] == [0, 2, 3]
    assert row["origin"]["rank"] == 1 and row["origin"]["path"].endswith("pertask-1-vm-1.out")
    assert set(row["origin"]) == {"rank", "node", "gpu", "path", "line", "how"}
    assert len(row["paths"]) == 4


def test_files_from_standard_input() -> None:
    listing = "\n".join(TWO_NODES) + "\n"
    done = run_cli("classify", "--attempt", "--json", "--files-from", "-", stdin=listing.encode())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["origin"]["rank"] == 5


def test_usage_errors(tmp_path: Path) -> None:
    assert run_cli("classify").returncode == 2
    facts = tmp_path / "facts.json"
    facts.write_text("{}")
    assert run_cli("classify", "--facts", str(facts), TWO_NODES[0]).returncode == 2
    facts.write_text('{"tasks_per_node": "eight"}')
    bad = run_cli("classify", "--attempt", "--facts", str(facts), TWO_NODES[0])
    assert bad.returncode == 2 and "tasks_per_node" in bad.stderr
    missing = run_cli("classify", "--attempt", str(tmp_path / "nope.log"))
    assert missing.returncode == 1 and "no such file" in missing.stderr


def test_the_readme_example_is_what_the_command_prints(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("$ failclass classify --attempt --facts facts.json ", 1)[1].split("```", 1)[0]
    command, *shown = block.rstrip("\n").split("\n")
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"nodes": ["node-a", "node-b"], "tasks_per_node": 4}))
    files = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob(command))
    done = run_cli("classify", "--attempt", "--facts", str(facts), *files)
    assert done.stdout.splitlines() == shown
