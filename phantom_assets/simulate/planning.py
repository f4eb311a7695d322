"""Initial hidden state of every session: what it looks for, in which order, for how long, and the
purchase decision it will make (its valuation, its quotes, whether it is in the market)."""

from __future__ import annotations

import numpy as np

from phantom_assets.simulate.behaviour import MAX_STEPS, SessionPlan
from phantom_assets.simulate.demand import DemandWorld
from phantom_assets.simulate.layout import BUY, RECON, RECON_ITEMS, SECOND, Layout
from phantom_assets.simulate.tasks import Task

__all__ = ["plan_sessions"]

TASTE_SD = 0.3  # per-subject idiosyncratic taste added to the task utility
PATIENCE_SIGMA = 0.5
_STATE_PARAMS = (
    "hover_mean",
    "p_learn",
    "p_back",
    "p_revisit",
    "p_refilter",
    "p_search_first",
    "p_noise",
    "p_remove",
    "p_abandon",
)


def plan_sessions(
    layout: Layout,
    tasks: tuple[Task, ...],
    utility: np.ndarray,
    affordable: np.ndarray,
    world: DemandWorld,
    rng: np.random.Generator,
    agents_search_before_buying: bool = False,
) -> SessionPlan:
    """Draw the initial state of every session of a layout.

    Reconnaissance sessions of one agent examine consecutive, disjoint slices of one systematic
    (utility-ordered) product order and never buy; the buy session goes straight to the best
    affordable product (`agents_search_before_buying`: after searching and filtering as its
    reconnaissance did). Human-like sessions examine products in a noisy order of their own, as
    many as their subject's need makes them compare, and decide at the item they settle on.
    Valuations follow `world` (`simulate.demand`): a human session's is drawn at its decision
    from the engagement it reached; an agent session's is its principal's, filled in by the
    caller once the store's humans have run (`SessionPlan.valuation_base` is NaN until then).

    Args:
        layout: Experiments and sessions of one store.
        tasks: The store's tasks (`layout.xp_task` indexes them).
        utility: (n_tasks, P) task utilities (see `tasks.task_utilities`).
        affordable: (n_tasks, P) budget fit.
        world: The store's demand, storefront markup and price test.
        rng: Source of randomness.
        agents_search_before_buying: The planted world of an agent whose behaviour before an
            unengaged quote shows (`SimulationConfig.agents_search_before_buying`).

    Returns:
        The session plan for `behaviour.run_sessions`.
    """
    n_xp, n_s, n_p = layout.xp_task.size, layout.n_sessions, utility.shape[1]
    xp = layout.session_xp
    role = layout.session_role
    task = layout.xp_task[xp]
    xp_utility = utility[layout.xp_task] + TASTE_SD * rng.standard_normal((n_xp, n_p))
    u = xp_utility[xp]
    fits = affordable[task]
    noise = np.where(
        np.isin(role, (RECON, BUY))[:, None],
        rng.standard_normal((n_xp, n_p))[xp],
        rng.standard_normal((n_s, n_p)),
    )
    score = u + layout.param("order_noise")[:, None] * noise
    score = np.where((role == BUY)[:, None], u + 10.0 * fits, score)
    order = np.argsort(-score, axis=1, kind="stable")

    # The latent need widens how many items a subject compares (mean kept: exp(λη − λ²/2)).
    need = rng.standard_normal(n_xp)
    breadth = np.exp(world.need_loading * need - world.need_loading**2 / 2.0)[xp]
    items_per_recon = rng.integers(RECON_ITEMS[0], RECON_ITEMS[1] + 1, size=n_xp)[xp]
    start_ptr = np.where(role == RECON, layout.session_rank * items_per_recon, 0)
    compare = 1 + rng.poisson(np.maximum(layout.param("compare_mean") - 1.0, 0.0) * breadth)
    target = np.select(
        [role == RECON, role == BUY, role == SECOND],
        [items_per_recon, 1, 1 + rng.poisson(0.5 * breadth, size=n_s)],
        compare,
    )
    filters_mean = layout.param("filters_mean") * np.where(role == SECOND, 0.5, 1.0)
    filters = np.where((role == BUY) & ~agents_search_before_buying, 0, rng.poisson(filters_mean))
    patience = np.exp(
        np.log(layout.param("patience_median")) + PATIENCE_SIGMA * rng.standard_normal(n_s)
    )
    patience = np.clip(np.rint(patience), 4, MAX_STEPS).astype(np.int64)
    patience = np.where(role == BUY, np.maximum(patience, 12), patience)

    # The decision: every session but a reconnaissance one decides at the item it settles on.
    arm = np.asarray(world.arms)[rng.integers(len(world.arms), size=n_xp)][xp]
    price_level = arm * np.exp(world.quote_noise * rng.standard_normal(n_s))
    in_market = rng.random(n_s) < world.in_market
    human = ~layout.session_is_agent
    valuation_base = np.where(human, world.mu + world.sigma * rng.standard_normal(n_s), np.nan)

    weights = np.array([t.filter_weights for t in tasks])[task]
    filter_cdf = np.cumsum(weights, axis=1) / weights.sum(axis=1, keepdims=True)
    return SessionPlan(
        order=order,
        start_ptr=start_ptr.astype(np.int64),
        utility=u,
        affordable=fits,
        filter_cdf=filter_cdf,
        decides=role != RECON,
        in_market=in_market,
        valuation_base=valuation_base,
        valuation_slope=np.where(human, world.beta, 0.0),
        price_level=price_level,
        target_views=target.astype(np.int64),
        filters=filters.astype(np.int64),
        patience=patience,
        params={name: layout.param(name) for name in _STATE_PARAMS},
        markup=world.markup,
        scale=world.scale,
    )
