"""watch_steps: the steps the watch took on running jobs (a warning, a release, a hung job
cancelled, a repeat offender named), one per idle or hung stretch, with their evidence and
what was run on the scheduler (failclass.waste.enforce).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-29 01:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "watch_steps",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.String(length=200), nullable=False),
        sa.Column("user", sa.String(length=200), nullable=False),
        sa.Column("vc", sa.String(length=200), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), nullable=False),
        sa.Column("taken_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("watch_steps") as batch:
        batch.create_index("ix_watch_steps_job", ["job_id", "action", "step", "taken_at"], unique=False)
        batch.create_index("ix_watch_steps_user", ["user", "action", "taken_at"], unique=False)


def downgrade() -> None:
    op.drop_table("watch_steps")
