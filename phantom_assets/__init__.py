"""PHANTOM: agent-aware dynamic pricing as a Dagster data-asset pipeline.

Sub-packages hold the pure, Dagster-free methodology; `phantom_assets.assets` holds the thin
Dagster asset definitions that call it.
"""

__version__ = "0.1.0"
