"""The policy's state across jobs, for operators: the input blacklist, users' holds and
nodes under suspicion; DELETE clears a blacklist entry or releases a hold."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Response

from failclass.limits import LIMITS
from failclass.service.bodies import JsonRoute
from failclass.service.deps import PolicyDep, Reader, StoreDep, Writer
from failclass.service.errors import STORED, documented
from failclass.service.responses import BlacklistOut, HoldsOut, NodesOut

router = APIRouter(prefix="/v1", route_class=JsonRoute, tags=["state"], responses=documented(*STORED))
EntryId = Annotated[int, Path(ge=1, le=LIMITS.int32_max, description="the id GET lists")]


@router.get("/blacklist", response_model=BlacklistOut)
def blacklist(store: StoreDep, _: Reader, include_cleared: bool = False) -> BlacklistOut:
    return BlacklistOut.model_validate({"blacklist": store.blacklist(include_cleared)})


@router.delete("/blacklist/{entry_id}", status_code=204, responses=documented(404))
def clear_blacklist(entry_id: EntryId, store: StoreDep, who: Writer) -> Response:
    if not store.clear_blacklist(entry_id, by=who or "anonymous"):
        raise HTTPException(404, f"no active blacklist entry {entry_id}")
    return Response(status_code=204)


@router.get("/holds", response_model=HoldsOut)
def holds(store: StoreDep, _: Reader, include_released: bool = False) -> HoldsOut:
    return HoldsOut.model_validate({"holds": store.holds(include_released)})


@router.delete("/holds/{hold_id}", status_code=204, responses=documented(404))
def release_hold(hold_id: EntryId, store: StoreDep, who: Writer) -> Response:
    if not store.release_hold(hold_id, by=who or "anonymous"):
        raise HTTPException(404, f"no active hold {hold_id}")
    return Response(status_code=204)


@router.get("/nodes", response_model=NodesOut)
def nodes(store: StoreDep, policy: PolicyDep, _: Reader) -> NodesOut:
    found = store.nodes(policy.nodes.window_hours, policy.nodes.min_jobs)
    return NodesOut.model_validate({"window_hours": policy.nodes.window_hours, "nodes": found})
