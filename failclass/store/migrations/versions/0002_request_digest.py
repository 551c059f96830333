"""attempts.request_digest: the SHA-256 of the request an idempotency key came with, so
that a key reused for another request is refused instead of answered with the first one.
Keys are stored scoped to their caller from this revision on (a SHA-256 of caller and
key); keys stored before it keep answering for nobody, and their rows have no digest.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-26 22:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("request_digest", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("request_digest")
