"""POST /v1/labels: an operator's correction, kept for the next `failclass train`."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException

from failclass.errors import ConfigError, InputError
from failclass.model.labels import add_text_label, labels_dir
from failclass.service.bodies import JsonRoute
from failclass.service.deps import ClassifierDep, SettingsDep, StoreDep, Writer
from failclass.service.errors import STORED, documented
from failclass.service.responses import LabelOut
from failclass.service.schemas import LabelIn

router = APIRouter(prefix="/v1", route_class=JsonRoute, tags=["labels"], responses=documented(*STORED))


@router.post("/labels", status_code=201, response_model=LabelOut, responses=documented(404))
def label(body: LabelIn, store: StoreDep, classifier: ClassifierDep, settings: SettingsDep, who: Writer) -> LabelOut:
    """Keep the log under its true reason (one of the taxonomy's reasons; 422 otherwise)."""
    known = set(classifier.ruleset.taxonomy.reasons)
    if body.attempt_id is not None and not store.has_attempt(body.attempt_id):
        raise HTTPException(404, f"no attempt {body.attempt_id}")  # before the log is kept: nothing half-done
    folder = settings.labels_dir or labels_dir()
    try:
        stored = add_text_label(body.log, body.reason, known, folder, body.note, who or "anonymous")
    except (ConfigError, InputError) as exc:
        raise HTTPException(422, str(exc)) from None
    try:
        label_id = store.add_label(body.attempt_id, body.reason, str(stored), body.note, who or "anonymous")
    except KeyError:
        raise HTTPException(404, f"no attempt {body.attempt_id}") from None
    return LabelOut(id=label_id, reason=body.reason, stored_as=stored.relative_to(folder).as_posix())
