"""classifications.checkpoint_basis and last_checkpoint_at: where a failed attempt's log last
saved a checkpoint, found when the attempt was reported with its log (the service), so that
the report counts the GPU time lost since it without the log at hand
(failclass/analytics/goodput.py). Rows recorded before, or without a log read, have neither.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-28 20:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("classifications") as batch:
        batch.add_column(sa.Column("checkpoint_basis", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("last_checkpoint_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("classifications") as batch:
        batch.drop_column("last_checkpoint_at")
        batch.drop_column("checkpoint_basis")
