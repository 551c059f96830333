"""Long work shows a tqdm bar on stderr when stderr is a terminal (a real pseudo-terminal
here) and nothing when it is not; the library reports its progress to the end."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

from conftest import ROOT, run_cli

from failclass.classifier import Classifier
from failclass.model.corpus import read_manifest
from failclass.model.crossval import cross_validate
from failclass.model.training import FOLDS, train

BAR = re.compile(r"(\d+)%\|.*\| (\d+)/(\d+) \[")  # tqdm's bar with a known total: "40%|████  | 2/5 ["


def on_terminal(*args: str) -> tuple[int, str, str]:
    """Run the real command line with stderr on a pseudo-terminal of 120 columns:
    (exit status, stdout, what the terminal showed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    command = [sys.executable, "-m", "failclass.cli", *args]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    shown = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the command ended and closed its side
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    assert process.stdout is not None
    stdout = process.stdout.read().decode()
    return process.wait(timeout=120), stdout, shown.decode(errors="replace")


def test_simulate_counts_on_a_terminal_and_says_nothing_in_a_pipe(tmp_path: Path) -> None:
    status, stdout, shown = on_terminal("simulate", "--fraction", "0.002", "--out", str(tmp_path / "t"))
    assert status == 0 and "attempts of" in stdout, stdout + shown
    assert re.search(r"drawing: \d+ attempts \[", shown), shown
    piped = run_cli("simulate", "--fraction", "0.002", "--no-logs", "--out", str(tmp_path / "p"))
    assert piped.returncode == 0 and piped.stderr == "", piped.stderr


def test_batch_shows_a_bar_on_a_terminal_and_nothing_in_a_pipe(tmp_path: Path) -> None:
    status, stdout, shown = on_terminal("--no-model", "batch", "samples", "--out", str(tmp_path / "tty"), "--processes", "1")
    assert status == 0 and "attempts classified" in stdout, stdout + shown
    totals = {(int(done), int(total)) for _, done, total in BAR.findall(shown)}
    assert totals and all(done <= total for done, total in totals), shown
    assert "classifying" in shown

    piped = run_cli("--no-model", "batch", "samples", "--out", str(tmp_path / "pipe"), "--processes", "1")
    assert piped.returncode == 0 and "attempts classified" in piped.stdout, piped.stderr
    assert piped.stderr == ""


def test_evaluate_shows_a_bar_on_a_terminal() -> None:
    status, stdout, shown = on_terminal("evaluate", "--split", "holdout")
    assert status == 0 and "accuracy" in stdout.lower(), stdout + shown
    assert "evaluating" in shown and BAR.search(shown), shown


def test_training_reports_each_fit(tmp_path: Path) -> None:
    corpus = [e for e in read_manifest() if e.reason in ("gpu_oom", "syntax_error", "no_signature")]
    heard: list[tuple[int, int]] = []
    train(corpus, [], tmp_path / "model.npz", on_progress=lambda done, total: heard.append((done, total)))
    assert heard == [(fit, FOLDS + 1) for fit in range(1, FOLDS + 2)]


def test_cross_validation_reports_every_log_once(classifier: Classifier) -> None:
    development = [e for e in read_manifest() if e.split != "holdout"]
    chosen = [e for e in development if e.reason == "gpu_oom"][:10] + [e for e in development if e.reason == "syntax_error"][:10]
    heard: list[tuple[int, int]] = []
    cross_validate(chosen, classifier.ruleset, 0.5, on_progress=lambda done, total: heard.append((done, total)))
    assert [done for done, _ in heard] == list(range(1, len(chosen) + 1))
    assert {total for _, total in heard} == {len(chosen)}
