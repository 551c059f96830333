"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-22 05:32:30.671251
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "attempts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.String(length=200), nullable=False),
        sa.Column("attempt_no", sa.Integer(), nullable=False),
        sa.Column("user", sa.String(length=200), nullable=False),
        sa.Column("vc", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("submit_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("start_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("end_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("gpus", sa.Integer(), nullable=False),
        sa.Column("gpu_type", sa.String(length=100), nullable=True),
        sa.Column("nodes", sa.JSON(), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("signal", sa.Integer(), nullable=True),
        sa.Column("inputs", sa.JSON(), nullable=False),
        sa.Column("logs", sa.JSON(), nullable=False),
        sa.Column("idempotency_key", sa.String(length=200), nullable=True),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("idempotency_key"),
        sa.UniqueConstraint("job_id", "attempt_no", name="uq_attempt_job_no"),
    )
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_attempts_job_id"), ["job_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_attempts_recorded_at"), ["recorded_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_attempts_user"), ["user"], unique=False)

    op.create_table(
        "blacklist",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("path", sa.String(length=2000), nullable=False),
        sa.Column("why", sa.Text(), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("cleared_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("cleared_by", sa.String(length=200), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("blacklist", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_blacklist_path"), ["path"], unique=False)

    op.create_table(
        "holds",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user", sa.String(length=200), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("released_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("released_by", sa.String(length=200), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("holds", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_holds_user"), ["user"], unique=False)

    op.create_table(
        "classifications",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("rule_id", sa.String(length=200), nullable=True),
        sa.Column("signature", sa.String(length=200), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("progress_epoch", sa.Integer(), nullable=True),
        sa.Column("progress_step", sa.Integer(), nullable=True),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("attempt_id"),
    )
    with op.batch_alter_table("classifications", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_classifications_reason"), ["reason"], unique=False)

    op.create_table(
        "decisions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=True),
        sa.Column("job_id", sa.String(length=200), nullable=False),
        sa.Column("user", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=True),
        sa.Column("clause", sa.String(length=300), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("attempt_id"),
    )
    with op.batch_alter_table("decisions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_decisions_action"), ["action"], unique=False)
        batch_op.create_index(batch_op.f("ix_decisions_decided_at"), ["decided_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_decisions_job_id"), ["job_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_decisions_user"), ["user"], unique=False)

    op.create_table(
        "input_failures",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("path", sa.String(length=2000), nullable=False),
        sa.Column("job_id", sa.String(length=200), nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=False),
        sa.Column("failed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("attempt_id", "path", name="uq_input_failure"),
    )
    with op.batch_alter_table("input_failures", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_input_failures_path"), ["path"], unique=False)

    op.create_table(
        "labels",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=True),
        sa.Column("reason", sa.String(length=64), nullable=False),
        sa.Column("stored_as", sa.String(length=2000), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("labelled_by", sa.String(length=200), nullable=False),
        sa.Column("labelled_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempts.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "node_failures",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("node", sa.String(length=300), nullable=False),
        sa.Column("job_id", sa.String(length=200), nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=False),
        sa.Column("failed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("node_failures", schema=None) as batch_op:
        batch_op.create_index("ix_node_failures_node_time", ["node", "failed_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("node_failures", schema=None) as batch_op:
        batch_op.drop_index("ix_node_failures_node_time")

    op.drop_table("node_failures")
    op.drop_table("labels")
    with op.batch_alter_table("input_failures", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_input_failures_path"))

    op.drop_table("input_failures")
    with op.batch_alter_table("decisions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_decisions_user"))
        batch_op.drop_index(batch_op.f("ix_decisions_job_id"))
        batch_op.drop_index(batch_op.f("ix_decisions_decided_at"))
        batch_op.drop_index(batch_op.f("ix_decisions_action"))

    op.drop_table("decisions")
    with op.batch_alter_table("classifications", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_classifications_reason"))

    op.drop_table("classifications")
    with op.batch_alter_table("holds", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_holds_user"))

    op.drop_table("holds")
    with op.batch_alter_table("blacklist", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_blacklist_path"))

    op.drop_table("blacklist")
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_attempts_user"))
        batch_op.drop_index(batch_op.f("ix_attempts_recorded_at"))
        batch_op.drop_index(batch_op.f("ix_attempts_job_id"))

    op.drop_table("attempts")
