"""The HTTP service as clients use it: a real uvicorn server started by `failclass serve`,
on SQLite and on PostgreSQL, called over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import ROOT, postgres_schema_url, run_cli
from service_server import running_service

pytestmark = pytest.mark.e2e

NCCL = (ROOT / "corpora/public/mpi_runtime_failure/llamafactory_allreduce_watchdog_8gpu.log").read_text()
MISSING = (ROOT / "corpora/produced/incorrect_inputs/incorrect_inputs__missing_data_file__0.log").read_text()
GPU_OOM = (ROOT / "corpora/public/gpu_oom/deepspeed_zero_inference_torch_oom.log").read_bytes()
SRUN_LABEL = ROOT / "corpora/multirank/attempts/srun_label__missing_input__r3of8__0"  # 8 ranks on 4 nodes, rank 3 first


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("tokens") / "tokens.json"
    made = {}
    for name, scopes in (("ops", "read,write"), ("dashboard", "read")):
        done = run_cli("token", "create", name, "--scopes", scopes, "--file", str(path))
        assert done.returncode == 0, done.stderr
        made[name] = done.stdout.strip()
    return {"file": path, **made}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, tokens: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    workdir = tmp_path_factory.mktemp("service")
    urls = iter(postgres_schema_url()) if request.param == "postgresql" else iter([f"sqlite:///{workdir / 'failclass.db'}"])
    database_url = next(urls)
    env = {"FAILCLASS_LABELS_DIR": str(workdir / "labels"), "FAILCLASS_MAX_REQUEST_BYTES": str(1 << 20)}
    with running_service(database_url, workdir, "--tokens-file", str(tokens["file"]), env=env) as base:
        yield {"base": base, "workdir": workdir, "database": request.param, "url": database_url}
    next(urls, None)  # drops the PostgreSQL schema


def client(service: dict[str, Any], token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=service["base"], headers=headers, timeout=30)


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["status"] == status and body["error"]["code"] == code
    assert "Traceback" not in response.text
    return body["error"]


def test_health_and_docs_need_no_token(service: dict[str, Any]) -> None:
    with client(service, None) as http:
        health = http.get("/healthz").json()
        assert health["status"] == "ok" and health["rules"] >= 230 and health["auth"] is True
        assert health["database"] == service["database"]
        assert http.get("/readyz").json() == health  # the store takes writes: ready
        spec = http.get("/openapi.json").json()
        assert {
            "/v1/classify",
            "/v1/attempts",
            "/v1/jobs/{job_id}",
            "/v1/decisions",
            "/v1/blacklist",
            "/v1/holds",
            "/v1/nodes",
            "/v1/report",
            "/v1/labels",
        } <= set(spec["paths"])
        assert http.get("/docs").status_code == 200


def test_tokens_and_scopes(service: dict[str, Any], tokens: dict[str, Any]) -> None:
    assert tokens["ops"] not in tokens["file"].read_text()  # only hashes at rest
    with client(service, None) as anonymous:
        assert_error(anonymous.post("/v1/classify", content=NCCL), 401, "unauthorized")
    with client(service, "fc_not-a-token") as stranger:
        assert_error(stranger.get("/v1/holds"), 401, "unauthorized")
    with client(service, tokens["dashboard"]) as reader:
        assert reader.post("/v1/classify", content=NCCL).status_code == 200
        error = assert_error(
            reader.post("/v1/attempts", json={"job_id": "j", "attempt": 1, "user": "u", "log": NCCL}), 403, "forbidden"
        )
        assert "write" in error["message"]


def test_classify_raw_json_and_bad_bytes(service: dict[str, Any], tokens: dict[str, Any]) -> None:
    with client(service, tokens["dashboard"]) as http:
        raw = http.post("/v1/classify", content=GPU_OOM, headers={"Content-Type": "text/plain"}).json()
        assert raw["reason"] == "gpu_oom" and raw["source"] == "signature" and raw["evidence"][0]["line"] >= 1
        assert set(raw) >= {"reason", "reason_name", "categories", "source", "rule_id", "confidence", "evidence"}
        assert "path" not in raw
        assert http.post("/v1/classify", json={"log": NCCL}).json()["reason"] == "mpi_runtime_failure"
        junk = http.post(
            "/v1/classify", content=b"\xff\xfe\x00binary\x80 junk\n" * 100, headers={"Content-Type": "application/octet-stream"}
        )
        assert junk.status_code == 200 and junk.json()["reason"] == "no_signature"
        assert_error(
            http.post("/v1/classify", content=b"{", headers={"Content-Type": "application/json"}), 422, "invalid_request"
        )
        assert_error(
            http.post("/v1/classify", content=b"x", headers={"Content-Type": "image/png"}), 415, "unsupported_media_type"
        )


def test_request_size_limit(service: dict[str, Any], tokens: dict[str, Any]) -> None:
    with client(service, tokens["ops"]) as http:
        big = b"epoch 1 step 1 loss 0.5\n" * 50_000  # 1.2 MB, over the 1 MiB limit set for this server
        error = assert_error(http.post("/v1/classify", content=big), 413, "request_too_large")
        assert str(1 << 20) in error["message"]
        chunked = http.post("/v1/classify", content=iter([big[:600_000], big[600_000:]]))  # no Content-Length
        assert_error(chunked, 413, "request_too_large")
        assert http.get("/healthz").status_code == 200


def test_reporting_attempts_and_reading_them_back(service: dict[str, Any], tokens: dict[str, Any]) -> None:
    facts = {
        "job_id": "svc-1",
        "user": "alice",
        "gpus": 8,
        "nodes": ["gpu-01"],
        "start_time": "2026-11-02T09:00:00Z",
        "end_time": "2026-11-02T10:40:00Z",
    }
    with client(service, tokens["ops"]) as http:
        first = http.post("/v1/attempts", json={**facts, "attempt": 1, "log": NCCL}, headers={"Idempotency-Key": "svc-1/1"})
        assert first.status_code == 201, first.text
        body = first.json()
        assert body["duplicate"] is False and body["classification"]["reason"] == "mpi_runtime_failure"
        decision = body["decision"]
        assert decision["action"] == "retry" and decision["explanation"]["policy_clause"] == "reasons.mpi_runtime_failure.action"
        assert decision["explanation"]["evidence"][0]["text"].startswith("[80746] [rank0]")
        again = http.post("/v1/attempts", json={**facts, "attempt": 1, "log": NCCL}, headers={"Idempotency-Key": "svc-1/1"})
        assert again.status_code == 200 and again.json()["duplicate"] is True
        assert again.json()["decision"] == decision

        job = http.get("/v1/jobs/svc-1").json()
        assert [a["attempt"] for a in job["attempts"]] == [1] and job["attempts"][0]["gpus"] == 8
        listed = http.get("/v1/decisions", params={"job_id": "svc-1"}).json()["decisions"]
        assert len(listed) == 1 and listed[0]["action"] == "retry"
        assert_error(http.get("/v1/jobs/never-seen"), 404, "not_found")
        invalid = assert_error(http.post("/v1/attempts", json={"job_id": "x", "attempt": 0, "user": "u"}), 422, "invalid_request")
        assert any(d["where"] == "body.attempt" for d in invalid["details"])
        assert_error(http.get("/v1/decisions", params={"limit": 5000}), 422, "invalid_request")

        table = http.get("/v1/report").json()
        (row,) = [r for r in table["table7"] if r["reason_id"] == "mpi_runtime_failure"]
        assert row["trials"] >= 1 and row["demand_gt4"] >= 1 and row["rtf_p50_min"] == 100.0


def test_an_attempt_of_interleaved_ranks_is_recorded_with_its_origin(service: dict[str, Any], tokens: dict[str, Any]) -> None:
    """srun --label's one log of eight ranks: the origin rank (3) and its node, placed by the
    facts' nodes and tasks per node, are recorded with the classification."""
    truth = json.loads((SRUN_LABEL / "truth.json").read_text())
    facts = {**truth["facts"], "job_id": "svc-ranks", "attempt": 1, "user": "alice", "pods": {"train-3": "node2"}}
    log = (SRUN_LABEL / "job.log").read_text()
    with client(service, tokens["ops"]) as http:
        made = http.post("/v1/attempts", json={**facts, "log": log})
        assert made.status_code == 201, made.text
        assert made.json()["classification"]["reason"] == truth["reason"] == "incorrect_inputs"
        (attempt,) = http.get("/v1/jobs/svc-ranks").json()["attempts"]
        assert (
            (attempt["origin_rank"], attempt["origin_node"]) == (truth["origin"]["rank"], truth["origin"]["node"]) == (3, "node2")
        )
        assert (attempt["nodes"], attempt["tasks_per_node"], attempt["pods"]) == (
            truth["facts"]["nodes"],
            2,
            {"train-3": "node2"},
        )
        refused = http.post("/v1/attempts", json={**facts, "attempt": 2, "tasks_per_node": 0, "log": log})
        assert any(d["where"] == "body.tasks_per_node" for d in assert_error(refused, 422, "invalid_request")["details"])


def test_blacklist_admission_and_clearing_over_http(service: dict[str, Any], tokens: dict[str, Any]) -> None:
    dataset = "/nonexistent/data"
    with client(service, tokens["ops"]) as http:
        for n, job in enumerate(("bl-a", "bl-a", "bl-b", "bl-c")):
            response = http.post(
                "/v1/attempts", json={"job_id": job, "attempt": n + 1, "user": f"user{n}", "inputs": [dataset], "log": MISSING}
            )
            assert response.status_code == 201, response.text
        assert response.json()["decision"]["action"] == "reject"
        (entry,) = http.get("/v1/blacklist").json()["blacklist"]
        assert entry["path"] == dataset
        admission = http.post("/v1/admissions", json={"job_id": "bl-d", "attempt": 1, "user": "dana", "inputs": [dataset]}).json()
        assert admission["action"] == "reject" and dataset in admission["explanation"]["message"]
        assert http.delete(f"/v1/blacklist/{entry['id']}").status_code == 204
        assert_error(http.delete(f"/v1/blacklist/{entry['id']}"), 404, "not_found")
        assert (
            http.post("/v1/admissions", json={"job_id": "bl-d", "attempt": 1, "user": "dana", "inputs": [dataset]}).json()[
                "action"
            ]
            == "admit"
        )
        assert http.get("/v1/holds").json() == {"holds": []}
        assert http.get("/v1/nodes").json()["nodes"] == []


def test_labels_are_kept_for_training(service: dict[str, Any], tokens: dict[str, Any]) -> None:
    with client(service, tokens["ops"]) as http:
        made = http.post("/v1/labels", json={"log": NCCL, "reason": "mpi_runtime_failure", "note": "seen by ops"})
        assert made.status_code == 201, made.text
        named = made.json()["stored_as"]  # relative to the labels folder: the server's paths stay its own
        assert named.startswith("mpi_runtime_failure/") and not Path(named).is_absolute() and ".." not in named
        stored = service["workdir"] / "labels" / named
        assert stored.read_text() == NCCL
        assert json.loads(stored.with_suffix(".json").read_text())["by"] == "ops"
        assert_error(http.post("/v1/labels", json={"log": NCCL, "reason": "gpu_on_fire"}), 422, "invalid_request")
        assert_error(http.post("/v1/labels", json={"log": NCCL, "reason": "cpu_oom", "attempt_id": 99999}), 404, "not_found")


def test_metrics_count_what_happened(service: dict[str, Any], tokens: dict[str, Any]) -> None:
    with client(service, tokens["ops"]) as http:
        http.post("/v1/classify", content=GPU_OOM)
        text = http.get("/metrics").text
        assert 'failclass_classifications_total{reason="gpu_oom",source="signature"}' in text
        assert "failclass_request_seconds_bucket" in text


OOM = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.35 GiB total capacity)"


def test_text_utf8_cannot_hold_is_kept_as_replacement_characters(service: dict[str, Any], tokens: dict[str, Any]) -> None:
    """A lone surrogate (JSON "\\ud800") or the bytes ED A0 80 in a JSON body: classified,
    recorded and labelled with U+FFFD in their place, as the command line does
    (tests/cli/test_text_entry.py); one connection throughout, never dropped."""
    json_type = {"Content-Type": "application/json"}
    with client(service, tokens["ops"]) as http:
        for n, (unheld, kept) in enumerate(((b"\\ud800", "\ufffd"), (b"\xed\xa0\x80", "\ufffd" * 3)), 1):
            log = unheld + b" " + OOM.encode()  # as it stands in the JSON text
            facts = b'{"job_id": "sur-%d", "attempt": 1, "user": "u%s", "log": "%s"}' % (n, unheld, log)
            recorded = http.post("/v1/attempts", content=facts, headers=json_type)
            assert recorded.status_code == 201, recorded.text
            assert recorded.json()["classification"]["evidence"][0]["text"] == f"{kept} {OOM}"
            classified = http.post("/v1/classify", content=b'{"log": "%s"}' % log, headers=json_type)
            assert classified.status_code == 200, classified.text
            assert classified.json()["evidence"][0]["text"] == f"{kept} {OOM}"
            assert http.get(f"/v1/jobs/sur-{n}").json()["attempts"][0]["user"] == f"u{kept}"
        raw_body = http.post("/v1/classify", content=b"\xed\xa0\x80 " + OOM.encode(), headers={"Content-Type": "text/plain"})
        assert raw_body.json()["evidence"][0]["text"] == f"\ufffd\ufffd\ufffd {OOM}"
        label = http.post(
            "/v1/labels", content=b'{"log": "\\ud800 ' + OOM.encode() + b'", "reason": "gpu_oom"}', headers=json_type
        )
        assert label.status_code == 201, label.text
        assert (service["workdir"] / "labels" / label.json()["stored_as"]).read_text() == f"\ufffd {OOM}"
    assert "Traceback" not in next(service["workdir"].glob("server-*.log")).read_text()


def test_the_steps_the_watch_took_are_listed_newest_first_by_job_and_user(
    service: dict[str, Any], tokens: dict[str, Any]
) -> None:
    from datetime import UTC, datetime

    from failclass.contracts import WatchStep
    from failclass.store.repository import Store

    since, at = datetime(2026, 11, 29, 8, 0, tzinfo=UTC), datetime(2026, 11, 29, 8, 31, tzinfo=UTC)
    store = Store.open(service["url"])
    for job, user, action in (("nb-1", "ana", "warn"), ("nb-1", "ana", "release"), ("nb-2", "bo", "warn")):
        step = WatchStep(job, user, "short", action, 1, since, at, "no GPU work for 31 min", ("n1:0",), done=(f"scancel {job}",))
        assert store.take_step(step) is not None
    assert store.take_step(step) is None  # taken already in this stretch
    with client(service, tokens["dashboard"]) as http:
        found = http.get("/v1/watch/steps", params={"user": "ana"}).json()["steps"]
        assert [(s["job_id"], s["action"]) for s in found] == [("nb-1", "release"), ("nb-1", "warn")]
        assert found[0]["done"] == ["scancel nb-1"] and found[0]["since"].startswith("2026-11-29T08:00:00")
        assert [s["user"] for s in http.get("/v1/watch/steps", params={"job_id": "nb-2"}).json()["steps"]] == ["bo"]
        assert_error(http.get("/v1/watch/steps", params={"limit": 10**6}), 422, "invalid_request")
