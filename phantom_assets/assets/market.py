"""Market group: the pricing market simulator compiled per store from its class kernels."""

from pathlib import Path

import dagster as dg
import gymnasium as gym

from phantom_assets.assets.metadata import artifact_version, code_version_of, with_settings
from phantom_assets.assets.partitions import BY_STORE, GridPartitions, store_partitions
from phantom_assets.assets.resources import StorageResource
from phantom_assets.config import Settings
from phantom_assets.constants import ACTORS, STORES
from phantom_assets.fingerprint import load_kernel_set, load_score_calibration
from phantom_assets.market import (
    MarketSpec,
    PricingMarketEnv,
    alpha_half_width,
    compile_market_spec,
    valuation_w1,
)

MARKET_CODE = code_version_of(
    "phantom_assets.assets.market",
    "phantom_assets.market",
    "phantom_assets.contamination",
    "phantom_assets.constants",
)
ENV_CHECK = "env_passes_check_env"
CHECK_ENV_ALPHA = 0.5  # nominal α of the env that the check builds (robust mode: every code path)


def spec_markdown(spec: MarketSpec, half_width: float, w1: float) -> str:
    """Short markdown table of the headline spec parameters."""
    rows = {
        "products": spec.n_products,
        "price bounds [p_low, p_high]": f"[{spec.p_low:g}, {spec.p_high:g}]",
        "competitive cap": f"{spec.competitive_cap:g}",
        "anchor prices": f"{spec.anchor.min():.2f} - {spec.anchor.max():.2f}",
        "valuation human N(μ, σ)": f"N({spec.mu_human:g}, {spec.sigma_human:g})",
        "valuation agent N(μ, σ)": f"N({spec.mu_agent:g}, {spec.sigma_agent:g})",
        "W1(P_H, P_A)": f"{w1:.3f}",
        "ε (W1 radius)": f"{spec.ambiguity_radius_w1:g}",
        "α half-width ε / W1": f"{half_width:.3f}",
        "price levels": f"{spec.n_actions} in [{min(spec.price_levels):g}, "
        f"{max(spec.price_levels):g}]",
        "sessions / step": spec.sessions_per_step,
        "robust candidates": spec.robust_candidates,
        "chain bank / class": f"{spec.chain_bank_size:,}",
        "episode steps": spec.episode_steps,
    }
    body = "\n".join(f"| {name} | {value} |" for name, value in rows.items())
    return f"| parameter | value |\n|---|---|\n{body}"


def market_simulators(context: dg.AssetExecutionContext, storage: StorageResource):
    """Compiled market of one store (`spec.npz` arrays + `spec.json` scalars): the store's full
    human and agent kernels, valuation laws, price bounds and the robust ambiguity set."""
    store, settings = context.partition_key, storage.settings()
    human, agent = (load_kernel_set(settings.lake, store, actor).full for actor in ACTORS)
    calibration = load_score_calibration(settings.lake, store)  # the f the store selected
    anchor_seed = STORES.index(store)
    spec = compile_market_spec(
        human.probs,
        agent.probs,
        settings.market,
        anchor_seed,
        f_intercept=calibration.linear_coef[0],
        f_slope=calibration.linear_coef[1],
    )
    folder = settings.lake.market_dir(store)
    version, artifacts = artifact_version(*spec.save(folder))
    half_width = alpha_half_width(spec)
    w1 = valuation_w1(spec.mu_human, spec.sigma_human, spec.mu_agent, spec.sigma_agent)
    yield dg.MaterializeResult(
        data_version=version,
        metadata={
            "path": dg.MetadataValue.path(str(folder)),
            **artifacts,
            "alpha_half_width": half_width,
            "f_method": calibration.method,
            "f_coef": str(calibration.linear_coef),
            "w1_valuation": w1,
            "ambiguity_radius_w1": spec.ambiguity_radius_w1,
            "n_products": spec.n_products,
            "anchor_seed": anchor_seed,
            "spec": dg.MetadataValue.md(spec_markdown(spec, half_width, w1)),
        },
    )
    yield env_check_result(folder)


def build_market_assets(settings: Settings, grids: GridPartitions) -> list[dg.AssetsDefinition]:
    """`market_simulators`, versioned with the market settings it compiles."""
    asset = dg.asset(
        partitions_def=store_partitions,
        deps=[dg.AssetDep("transition_kernels", partition_mapping=BY_STORE), "divergence_scores"],
        group_name="market",
        kinds={"python", "numpy", "gymnasium"},
        code_version=with_settings(MARKET_CODE, settings.market),
        check_specs=[
            dg.AssetCheckSpec(
                ENV_CHECK,
                asset="market_simulators",
                blocking=True,
                description="The env built from the saved spec passes gymnasium's check_env.",
            )
        ],
    )
    return [asset(market_simulators)]


def env_check_result(folder: Path) -> dg.AssetCheckResult:
    """Run gymnasium's `check_env` on a robust env built from the spec saved in `folder`."""
    from gymnasium.utils.env_checker import check_env

    env = PricingMarketEnv(MarketSpec.load(folder), CHECK_ENV_ALPHA, robust=True)
    try:
        check_env(env, skip_render_check=True)
    except (AssertionError, gym.error.Error) as error:
        return dg.AssetCheckResult(
            check_name=ENV_CHECK,
            passed=False,
            metadata={"error": f"{type(error).__name__}: {error}"},
        )
    finally:
        env.close()
    return dg.AssetCheckResult(
        check_name=ENV_CHECK, passed=True, metadata={"alpha": CHECK_ENV_ALPHA}
    )
