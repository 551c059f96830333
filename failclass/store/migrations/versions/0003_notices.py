"""notices: the outbox of notices (holds, blacklisted inputs, suspect nodes, ...), one row
per notice and channel, with its delivery state (failclass.notify).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-28 19:45:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "notices",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("channel", sa.String(length=100), nullable=False),
        sa.Column("key", sa.String(length=500), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("job_id", sa.String(length=200), nullable=False),
        sa.Column("user", sa.String(length=200), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("tries", sa.Integer(), nullable=False),
        sa.Column("next_try_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("notices") as batch:
        batch.create_index("ix_notices_due", ["status", "next_try_at"], unique=False)
        batch.create_index("ix_notices_key", ["channel", "key", "created_at"], unique=False)
        batch.create_index("ix_notices_job_kind", ["channel", "job_id", "kind", "created_at"], unique=False)


def downgrade() -> None:
    op.drop_table("notices")
