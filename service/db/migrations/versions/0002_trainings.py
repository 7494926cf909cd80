"""trainings, their segments, and probe end states (ttc train, issue 13)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 08:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ttc_trainings",
        sa.Column("study_id", sa.String(length=32), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("max_iterations", sa.Integer(), nullable=False),
        sa.Column("max_overhead", sa.Float(), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("timeline", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["study_id"], ["ttc_studies.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("study_id"),
    )
    with op.batch_alter_table("ttc_trainings", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ttc_trainings_state"), ["state"], unique=False)

    op.create_table(
        "ttc_training_segments",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("study_id", sa.String(length=32), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("role", sa.String(length=8), nullable=False),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("result", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["study_id"], ["ttc_studies.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("study_id", "key", name="uq_ttc_training_segments_study_key"),
    )
    with op.batch_alter_table("ttc_training_segments", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ttc_training_segments_study_id"), ["study_id"], unique=False)

    op.create_table(
        "ttc_probe_states",
        sa.Column("study_id", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["study_id"], ["ttc_studies.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("study_id", "key"),
    )


def downgrade() -> None:
    op.drop_table("ttc_probe_states")
    with op.batch_alter_table("ttc_training_segments", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ttc_training_segments_study_id"))
    op.drop_table("ttc_training_segments")
    with op.batch_alter_table("ttc_trainings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ttc_trainings_state"))
    op.drop_table("ttc_trainings")
