"""The policy's state across jobs, for operators: the input blacklist, users' holds and
nodes under suspicion; DELETE clears a blacklist entry or releases a hold."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Response

from failclass.service.deps import PolicyDep, Reader, StoreDep, Writer

router = APIRouter(prefix="/v1", tags=["state"])


@router.get("/blacklist")
def blacklist(store: StoreDep, _: Reader, include_cleared: bool = False) -> dict[str, Any]:
    return {"blacklist": store.blacklist(include_cleared)}


@router.delete("/blacklist/{entry_id}", status_code=204)
def clear_blacklist(entry_id: int, store: StoreDep, who: Writer) -> Response:
    if not store.clear_blacklist(entry_id, by=who or "anonymous"):
        raise HTTPException(404, f"no active blacklist entry {entry_id}")
    return Response(status_code=204)


@router.get("/holds")
def holds(store: StoreDep, _: Reader, include_released: bool = False) -> dict[str, Any]:
    return {"holds": store.holds(include_released)}


@router.delete("/holds/{hold_id}", status_code=204)
def release_hold(hold_id: int, store: StoreDep, who: Writer) -> Response:
    if not store.release_hold(hold_id, by=who or "anonymous"):
        raise HTTPException(404, f"no active hold {hold_id}")
    return Response(status_code=204)


@router.get("/nodes")
def nodes(store: StoreDep, policy: PolicyDep, _: Reader) -> dict[str, Any]:
    return {"window_hours": policy.nodes.window_hours, "nodes": store.nodes(policy.nodes.window_hours, policy.nodes.min_jobs)}
