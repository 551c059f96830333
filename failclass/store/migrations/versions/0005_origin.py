"""attempts.tasks_per_node and pods, and classifications.origin_rank and origin_node: the
attempt's facts that say where its ranks ran (ranks per node, pod -> node), and the rank
and node where its failure started, found when its logs were read as ranks
(failclass.logs.origin), so that a report can rank nodes by the failures they started.
Rows recorded before have neither: their attempts read back without tasks per node and
with no pods, their classifications without an origin.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-28 22:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("tasks_per_node", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("pods", sa.JSON(), nullable=True))
    with op.batch_alter_table("classifications") as batch:
        batch.add_column(sa.Column("origin_rank", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("origin_node", sa.String(length=300), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("classifications") as batch:
        batch.drop_column("origin_node")
        batch.drop_column("origin_rank")
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("pods")
        batch.drop_column("tasks_per_node")
