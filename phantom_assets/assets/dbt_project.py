"""The dbt project handle (kept alone so `dagster-dbt project prepare-and-package` can load it)."""

from __future__ import annotations

from pathlib import Path

from dagster_dbt import DbtProject

DBT_PROJECT_DIR = Path(__file__).resolve().parents[2] / "dbt_project"

phantom_dbt_project = DbtProject(project_dir=DBT_PROJECT_DIR, profiles_dir=DBT_PROJECT_DIR)
