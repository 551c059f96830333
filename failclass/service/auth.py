"""API tokens with scopes. Tokens are random strings shown once at creation; the tokens
file keeps only their SHA-256 (high-entropy secrets need no slow hash). With no tokens
file the service is open (the embedded default, on localhost)."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

SCOPES = ("read", "write")
BEARER = HTTPBearer(
    scheme_name="bearer",
    description="An API token made by `failclass token create` (scopes: read, write); none when the service runs without a tokens file.",
    auto_error=False,
)


@dataclass(frozen=True)
class Token:
    name: str
    sha256: str
    scopes: frozenset[str]


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def load_tokens(path: Path | None) -> list[Token] | None:
    """The configured tokens, or None when authentication is off."""
    if path is None:
        return None
    try:
        entries = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read the tokens file: {exc}") from None
    tokens = []
    for entry in entries:
        scopes = frozenset(entry.get("scopes", []))
        if not scopes <= set(SCOPES) or len(entry.get("sha256", "")) != 64:
            raise ValueError(f"{path}: token {entry.get('name')!r}: needs a sha256 and scopes among {SCOPES}")
        tokens.append(Token(entry["name"], entry["sha256"], scopes))
    return tokens


def create_token(path: Path, name: str, scopes: list[str]) -> str:
    """Add a token to the tokens file (created if absent); returns the secret, shown once."""
    if not scopes or set(scopes) - set(SCOPES):
        raise ValueError(f"scopes must be among {SCOPES}")
    entries = json.loads(path.read_text()) if path.exists() else []
    if any(e["name"] == name for e in entries):
        raise ValueError(f"a token named {name!r} exists already")
    secret = "fc_" + secrets.token_urlsafe(32)
    entries.append({"name": name, "sha256": digest(secret), "scopes": sorted(scopes)})
    path.write_text(json.dumps(entries, indent=1) + "\n")
    path.chmod(0o600)
    return secret


def requires(scope: str) -> Callable[..., str | None]:
    """A dependency: the caller's token name, or 401/403."""

    def check(request: Request, offered: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]) -> str | None:
        tokens: list[Token] | None = request.app.state.tokens
        if tokens is None:
            return None
        if offered is None or not offered.credentials.strip():
            raise HTTPException(
                401, "an API token is required: Authorization: Bearer <token>", headers={"WWW-Authenticate": "Bearer"}
            )
        hashed = digest(offered.credentials.strip())
        for token in tokens:
            if hmac.compare_digest(hashed, token.sha256):
                if scope not in token.scopes:
                    raise HTTPException(403, f"token {token.name!r} lacks the {scope!r} scope")
                return token.name
        raise HTTPException(401, "unknown API token", headers={"WWW-Authenticate": "Bearer"})

    return check
