"""The dbt project handle (kept alone: loading it builds no asset graph).

In a checkout the project is the repository's top-level `dbt_project/`. An installed package has
no checkout around it: `pip install .` ships that folder with its manifest as the package data
`phantom_assets/dbt_project/` (pyproject maps the one onto the other), which is then the project.
So `pip install .` is the packaging step; `dagster-dbt project prepare-and-package` is not needed
(in a checkout it would leave a copy there that runs outside `dagster dev` would use instead).
"""

from __future__ import annotations

from pathlib import Path

from dagster_dbt import DbtProject

PACKAGE_DIR = Path(__file__).resolve().parents[1]
CHECKOUT_DBT_PROJECT_DIR = PACKAGE_DIR.parent / "dbt_project"
PACKAGED_DBT_PROJECT_DIR = PACKAGE_DIR / "dbt_project"

# DbtProject requires `project_dir` to exist, so an installed package names its packaged copy;
# profiles.yml sits beside dbt_project.yml (profiles_dir defaults to the chosen project dir).
phantom_dbt_project = DbtProject(
    project_dir=(
        CHECKOUT_DBT_PROJECT_DIR if CHECKOUT_DBT_PROJECT_DIR.is_dir() else PACKAGED_DBT_PROJECT_DIR
    ),
    packaged_project_dir=PACKAGED_DBT_PROJECT_DIR,
)
