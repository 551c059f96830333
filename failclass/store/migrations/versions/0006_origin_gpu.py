"""classifications.origin_gpu: the GPU where an attempt's failure started, found when its
logs were read as ranks (failclass.logs.origin: the CUDA device its failure names, the GPU
a node's Xid names by bus id, or its local rank where each rank had one GPU), so that a
report can rank a node's GPUs by the failures they started. Rows recorded before have
none.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-29 01:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("classifications") as batch:
        batch.add_column(sa.Column("origin_gpu", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("classifications") as batch:
        batch.drop_column("origin_gpu")
