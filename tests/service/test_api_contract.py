"""The API contract of a real uvicorn server (`failclass serve`), on SQLite and on
PostgreSQL: Schemathesis with all its checks finds no 5xx and no answer the OpenAPI
document does not describe; /docs and /redoc load only assets the service serves itself;
values the database cannot hold are refused at the door; idempotency keys belong to
their caller and their request."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import ROOT, postgres_schema_url, run_cli
from service_server import running_service

pytestmark = pytest.mark.e2e

NCCL = (ROOT / "corpora/public/mpi_runtime_failure/llamafactory_allreduce_watchdog_8gpu.log").read_text()
CPU_OOM = (ROOT / "corpora/produced/cpu_oom/cpu_oom__python_memoryerror__0.log").read_text()
SCHEMATHESIS = Path(sys.executable).parent / "st"
ERROR_STATUSES = {"400", "401", "403", "404", "409", "413", "415", "422", "500", "503"}
EVERY = {"400", "413", "500"}  # any request may be unreadable, too large, or meet an internal error
STORELESS = {"/v1/classify", "/v1/waste/report", "/v1/waste/watch", "/metrics"}  # every other operation reads the store: 503


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("tokens") / "tokens.json"
    made: dict[str, Any] = {"file": path}
    for name in ("ops", "scheduler"):
        done = run_cli("token", "create", name, "--scopes", "read,write", "--file", str(path))
        assert done.returncode == 0, done.stderr
        made[name] = done.stdout.strip()
    return made


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, tokens: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    workdir = tmp_path_factory.mktemp("contract")
    urls = iter(postgres_schema_url()) if request.param == "postgresql" else iter([f"sqlite:///{workdir / 'failclass.db'}"])
    env = {"FAILCLASS_LABELS_DIR": str(workdir / "labels")}
    with running_service(next(urls), workdir, "--tokens-file", str(tokens["file"]), env=env) as base:
        yield {"base": base, "workdir": workdir, "database": request.param}
    next(urls, None)  # drops the PostgreSQL schema


def client(service: dict[str, Any], token: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=service["base"], headers=headers, timeout=30)


def refused(response: httpx.Response, status: int, where: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["status"] == status, body
    if where is not None:
        assert any(d["where"] == where for d in body["error"]["details"]), body
    return body["error"]  # type: ignore[no-any-return]


def test_schemathesis_finds_no_server_error_and_no_undocumented_answer(service: dict[str, Any], tokens: dict[str, Any]) -> None:
    command = [
        str(SCHEMATHESIS),
        "--config-file",
        str(Path(__file__).with_name("schemathesis.toml")),
        "run",
        f"{service['base']}/openapi.json",
        "--checks",
        "all",
        "--max-examples",
        "5",
        "--seed",
        "20261126",
        "--generation-database",
        "none",
        "--no-color",
        "--header",
        f"Authorization: Bearer {tokens['ops']}",
    ]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, check=False, cwd=service["workdir"])
    summary = done.stdout[done.stdout.rfind("SUMMARY") :]
    print(f"schemathesis on {service['database']}: {time.monotonic() - started:.1f} s\n{summary}")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    tested = re.search(r"Tested: (\d+)", summary)
    assert tested and int(tested.group(1)) >= 15, summary
    assert "Traceback" not in (service["workdir"] / next(p.name for p in service["workdir"].glob("server-*.log"))).read_text()


def test_openapi_describes_auth_errors_and_bodies(service: dict[str, Any]) -> None:
    with client(service) as http:
        spec = http.get("/openapi.json").json()
    assert spec["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": spec["components"]["securitySchemes"]["bearer"]["description"],
    }
    error = spec["components"]["schemas"]["ErrorOut"]
    assert error["required"] == ["error"]
    statuses: set[str] = set()
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            for status, answer in operation["responses"].items():
                if status >= "400":
                    statuses.add(status)
                    assert answer["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorOut"}
            assert set(operation["responses"]) >= EVERY, (method, path)
            assert ("503" in operation["responses"]) == (path not in STORELESS), (method, path)
            if path.startswith("/v1/"):
                assert operation["security"] == [{"bearer": []}], (method, path)
                assert {"401", "403", "422"} <= set(operation["responses"]), (method, path)
    assert statuses >= ERROR_STATUSES
    classify = spec["paths"]["/v1/classify"]["post"]
    assert set(classify["requestBody"]["content"]) == {"text/plain", "application/octet-stream", "application/json"}
    assert classify["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Classification"
    }
    attempts = spec["paths"]["/v1/attempts"]["post"]["responses"]
    assert attempts["201"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/AttemptOut"}
    assert "409" in attempts
    decision = spec["components"]["schemas"]["Decision"]
    assert "retry" in decision["properties"]["action"]["enum"]
    label_reasons = spec["components"]["schemas"]["LabelIn"]["properties"]["reason"]["enum"]
    assert "gpu_oom" in label_reasons
    report = {p["name"]: p["schema"].get("anyOf", [{}])[0] for p in spec["paths"]["/v1/report"]["get"]["parameters"]}
    for option, valid, invalid in (
        ("since", "2026-11-09T08:00:00Z", "i"),
        ("until", "7d", "7x"),
        ("compare_to", "previous", "0"),
    ):
        pattern = re.compile(report[option]["pattern"], re.ASCII)  # what the service accepts, exactly
        assert pattern.match(valid) and not pattern.match(invalid), option
        assert not pattern.match(f"{valid}/{valid}" if option != "compare_to" else f"{valid}x")


def test_docs_and_redoc_load_only_their_own_assets(service: dict[str, Any]) -> None:
    expected = {".js": "javascript", ".css": "text/css", ".png": "image/png"}
    with client(service) as http:
        for page in ("/docs", "/redoc"):
            html = http.get(page)
            assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
            assets = re.findall(r'(?:src|href)="([^"]+)"', html.text)
            assert assets and not [a for a in assets if not a.startswith("/")], assets  # no other host
            assert "/openapi.json" in html.text
            for asset in assets:
                served = http.get(asset)
                assert served.status_code == 200, asset
                assert expected[Path(asset).suffix] in served.headers["content-type"], (asset, served.headers)
                assert len(served.content) > 1000
        assert "SwaggerUIBundle" in http.get("/static/docs/swagger-ui-bundle.js").text
        assert "Redoc" in http.get("/static/docs/redoc.standalone.js").text[:2000]


def test_values_the_database_cannot_hold_are_refused_at_the_door(service: dict[str, Any], tokens: dict[str, Any]) -> None:
    fact = {"job_id": "edge-1", "attempt": 1, "user": "erin", "log": CPU_OOM}
    with client(service, tokens["ops"]) as http:
        refused(http.post("/v1/attempts", json={**fact, "exit_code": 99999999999999999999}), 422, "body.exit_code")
        refused(http.post("/v1/attempts", json={**fact, "attempt": 2**31}), 422, "body.attempt")
        refused(http.post("/v1/attempts", json={**fact, "gpus": True}), 422, "body.gpus")
        refused(http.post("/v1/attempts", json={**fact, "job_id": "edge\u0000-1"}), 422, "body.job_id")
        refused(http.post("/v1/attempts", json={**fact, "inputs": ["/data/\u0000x"]}), 422, "body.inputs.0")
        refused(http.post("/v1/attempts", json={**fact, "start_time": 1700000000}), 422, "body.start_time")
        backwards = {"start_time": "2026-11-02T10:00:00Z", "end_time": "2026-11-02T09:59:59Z"}  # the attempt model's check
        refused(http.post("/v1/attempts", json={**fact, **backwards}), 422, "body.end_time")
        refused(http.post("/v1/admissions", json={**fact, **backwards}), 422, "body.end_time")
        refused(http.post("/v1/admissions", json={**fact, "user": "\u0000"}), 422, "body.user")
        refused(http.delete(f"/v1/holds/{10**20}"), 422, "path.hold_id")
        refused(http.delete(f"/v1/blacklist/{2**31}"), 422, "path.entry_id")
        refused(http.get("/v1/jobs/edge%00-1"), 422, "path.job_id")
        refused(http.get("/v1/decisions", params={"user": "a\u0000"}), 422, "query.user")
        refused(http.post("/v1/labels", json={"log": "x", "reason": "gpu_oom", "attempt_id": 10**12}), 422, "body.attempt_id")
        assert http.get("/v1/jobs/edge-1").status_code == 404  # nothing reached the database
        kept = http.post("/v1/attempts", json={**fact, "exit_code": -(2**31), "log": "oom\u0000 here\n" + CPU_OOM})
        assert kept.status_code == 201, kept.text  # a NUL in the log is data: classified, not stored raw
        assert http.get("/v1/jobs/edge-1").json()["attempts"][0]["exit_code"] == -(2**31)
        assert http.get("/healthz").status_code == 200


def test_idempotency_keys_belong_to_the_caller_and_the_request(service: dict[str, Any], tokens: dict[str, Any]) -> None:
    first = {"job_id": "idem-1", "attempt": 1, "user": "fay", "log": NCCL}
    key = {"Idempotency-Key": "report-0001"}
    with client(service, tokens["ops"]) as ops, client(service, tokens["scheduler"]) as scheduler:
        made = ops.post("/v1/attempts", json=first, headers=key)
        assert made.status_code == 201, made.text
        again = ops.post("/v1/attempts", json=first, headers=key)
        assert again.status_code == 200 and again.json() == {**made.json(), "duplicate": True}
        other_job = ops.post("/v1/attempts", json={**first, "job_id": "idem-2"}, headers=key)
        assert "another request" in refused(other_job, 409)["message"]
        other_log = ops.post("/v1/attempts", json={**first, "log": CPU_OOM}, headers=key)
        refused(other_log, 409)
        in_body = ops.post("/v1/attempts", json={**first, "job_id": "idem-2", "idempotency_key": "report-0001"})
        refused(in_body, 409)
        assert ops.get("/v1/jobs/idem-2").status_code == 404  # refused, not silently merged
        theirs = scheduler.post("/v1/attempts", json={**first, "job_id": "idem-2"}, headers=key)
        assert theirs.status_code == 201 and theirs.json()["duplicate"] is False  # another caller's key space
        assert [a["attempt"] for a in ops.get("/v1/jobs/idem-2").json()["attempts"]] == [1]


def raw_http(service: dict[str, Any], request: bytes) -> tuple[str, dict[str, str], bytes]:
    """Send bytes as they are (no client would send them) and read the answer."""
    host, port = service["base"].removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    return status, {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}, body


def test_every_error_has_the_one_shape_even_before_the_app(service: dict[str, Any], tokens: dict[str, Any]) -> None:
    """Bodies Python's JSON reader gives up on and requests the HTTP server cannot parse
    get the error shape, with the 400 the OpenAPI document lists on every operation."""
    deep = b"[" * 1000 + b"]" * 1000
    digits = b'{"job_id": "d", "attempt": 1, "user": "u", "gpus": ' + b"1" * 5000 + b"}"
    json_type = {"Content-Type": "application/json"}
    with client(service, tokens["ops"]) as http:
        for path in ("/v1/attempts", "/v1/classify", "/v1/labels", "/v1/waste/report"):
            assert "nests too deeply" in refused(http.post(path, content=deep, headers=json_type), 400)["message"], path
        assert "4300 digits" in refused(http.post("/v1/attempts", content=digits, headers=json_type), 400)["message"]
        refused(http.delete("/v1/classify"), 405)
        refused(http.get("/v1/nowhere"), 404)
    for length in (b"abc", b"1x", b"-1"):
        status, headers, body = raw_http(
            service, b"POST /v1/classify HTTP/1.1\r\nHost: x\r\nContent-Length: " + length + b"\r\n\r\nab"
        )
        assert status == "HTTP/1.1 400 Bad Request", (length, status, body)
        assert headers["content-type"] == "application/json" and int(headers["content-length"]) == len(body)
        error = json.loads(body)["error"]
        assert error["status"] == 400 and error["code"] == "bad_request" and "cannot be read as HTTP" in error["message"]
