"""API tokens with scopes. Tokens are random strings shown once at creation; the tokens
file keeps only their SHA-256 (high-entropy secrets need no slow hash). With no tokens
file the service is open (the embedded default, on localhost); a tokens file without a
token is refused (every call would answer 401)."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from failclass.errors import ConfigError
from failclass.inbound import read_json
from failclass.schema import allowed, build

SCOPES = ("read", "write")
BEARER = HTTPBearer(
    scheme_name="bearer",
    description=(
        "An API token made by `failclass token create` (scopes: read, write); none when the service runs without a tokens file."
    ),
    auto_error=False,
)


@dataclass(frozen=True)
class Token:
    """One entry of the tokens file, as `failclass token create` writes it."""

    name: str
    sha256: str = allowed(fullmatch="[0-9a-f]{64}")
    scopes: tuple[str, ...] = allowed(choices=SCOPES)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def read_tokens(path: Path) -> list[Token]:
    """The tokens file's entries; ConfigError (``file: problem``, one line) when it cannot
    be read or is not a JSON list of tokens."""
    try:
        data = read_json(path.read_bytes())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the tokens file: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: not JSON: {exc}") from None
    try:
        return list(build(tuple[Token, ...], data, str(path)))
    except ConfigError as exc:
        raise ConfigError(f"{exc} (expected a list of {{name, sha256, scopes}}, as `failclass token create` writes)") from None


def load_tokens(path: Path | None) -> list[Token] | None:
    """The configured tokens, or None when authentication is off. A file without a token
    is refused: every call would answer 401."""
    if path is None:
        return None
    tokens = read_tokens(path)
    if not tokens:
        raise ConfigError(
            f"{path}: no token in the tokens file, so every call would be refused; add one with `failclass token create`"
        )
    return tokens


def too_open(path: Path) -> str | None:
    """What is wrong with the tokens file's permissions, if anything (as ssh says of keys):
    other users may read it, or others than its owner change it."""
    mode = path.stat().st_mode & 0o777
    if not mode & 0o027:
        return None
    who = "other users can read it" if not mode & 0o022 else "others than its owner can change it"
    return f"{path}: permissions {mode:04o} are too open ({who}); chmod 600 {path}"


def create_token(path: Path, name: str, scopes: list[str]) -> str:
    """Add a token to the tokens file (created if absent); returns the secret, shown once."""
    if not scopes or set(scopes) - set(SCOPES):
        raise ValueError(f"scopes must be among {SCOPES}")
    tokens = read_tokens(path) if path.exists() else []
    if any(t.name == name for t in tokens):
        raise ValueError(f"a token named {name!r} exists already")
    secret = "fc_" + secrets.token_urlsafe(32)
    tokens.append(Token(name, digest(secret), tuple(scopes)))
    entries = [{"name": t.name, "sha256": t.sha256, "scopes": sorted(t.scopes)} for t in tokens]
    path.write_text(json.dumps(entries, indent=1) + "\n")
    path.chmod(0o600)
    return secret


def requires(scope: str) -> Callable[..., Awaitable[str | None]]:
    """A dependency (a coroutine: no trip through the thread pool): the caller's token
    name, or 401/403."""

    async def check(request: Request, offered: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]) -> str | None:
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
