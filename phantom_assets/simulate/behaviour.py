"""Task-driven storefront state machine, advanced for all sessions in lock-step with numpy.

Every session carries hidden state -- task phase (listing, item page, cart, checkout), filters still
to apply, items compared so far vs the number it wants to compare, the best affordable item seen,
pending hovers on the current page, patience left -- and emits one canonical event per step from
it. A deciding session, done comparing (or out of patience), goes to the item it settled on and
decides there: it adds it to the cart iff it is in the market and its valuation at that moment
covers the storefront's quote (`simulate.demand`); either way its session ends after that.
Because decisions depend on these counters, the emitted event sequence is not a first-order
Markov chain. One loop iteration advances *every* live session by one event;
there is no Python loop over sessions or events.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

# PRICED_EVENTS: events that show a product's price (each also yields a price-log record).
from phantom_assets.constants import (
    CART_LOCK_EVENT,
    FILTER_EVENTS,
    HOVER_EVENTS,
    PRICED_EVENTS,
    QUOTE_EVENT,
    VOCABULARY,
)

__all__ = [
    "PAGES",
    "PRICED_EVENTS",
    "Emissions",
    "SessionPlan",
    "decision_views",
    "merge_emissions",
    "run_sessions",
]

_E = {name: i for i, name in enumerate(VOCABULARY)}
_FILTER_CODES = np.array([_E[e] for e in FILTER_EVENTS])
_HOVER_CODES = np.array([_E[e] for e in HOVER_EVENTS])
# Pages an event happens on (codes index this tuple; "item" is filled with the product id).
PAGES: tuple[str, ...] = ("landing", "search", "deals", "item", "cart", "checkout")
LANDING, SEARCH, DEALS, ITEM_PAGE, CART_PAGE, CHECKOUT_PAGE = range(6)
# Phases of the hidden task state.
START, LIST, ITEM, CART, CHECKOUT = range(5)
# Hover kind weights (title, paragraph, link, button) by phase, and hover-count scale by page.
_HOVER_CDF = np.cumsum(
    np.array(
        [
            [0.4, 0.2, 0.3, 0.1],
            [0.45, 0.1, 0.3, 0.15],
            [0.2, 0.4, 0.15, 0.25],
            [0.1, 0.0, 0.3, 0.6],
            [0.1, 0.0, 0.3, 0.6],
        ]
    ),
    axis=1,
)
_HOVER_SCALE = {
    LANDING: 0.6,
    SEARCH: 0.8,
    DEALS: 0.8,
    ITEM_PAGE: 1.3,
    CART_PAGE: 0.6,
    CHECKOUT_PAGE: 0.5,
}
MAX_STEPS = 250  # hard cap on events per session (patience is capped below it)


@dataclass(frozen=True)
class SessionPlan:
    """Initial hidden state and per-session parameters, all arrays of length S (or S x P).

    Attributes:
        order: (S, P) order in which the session examines products.
        start_ptr: (S,) position in `order` where the session starts examining.
        utility: (S, P) the task's utility of each product.
        affordable: (S, P) whether a product fits the task budget.
        filter_cdf: (S, 5) cumulative weights over `constants.FILTER_EVENTS`.
        decides: (S,) the session ends in a purchase decision (reconnaissance sessions do not).
        in_market: (S,) it is in the market for the item it settles on.
        valuation_base, valuation_slope: (S,) its relative valuation at the decision is
            base + slope·g(s), s the product views before the decision view.
        price_level: (S,) its quotes are base price × price_level × (1 + markup·g(s)).
        target_views: (S,) items to compare before deciding.
        filters: (S,) filter/sort/search actions at the start.
        patience: (S,) events before it stops comparing (a deciding session still decides).
        params: Per-session profile arrays (hover_mean, p_learn, p_back, p_revisit, p_refilter,
            p_search_first, p_noise, p_remove, p_abandon).
        markup, scale: the storefront's engagement markup m and s0 of g(s) = 1 − exp(−s/s0).
    """

    order: np.ndarray
    start_ptr: np.ndarray
    utility: np.ndarray
    affordable: np.ndarray
    filter_cdf: np.ndarray
    decides: np.ndarray
    in_market: np.ndarray
    valuation_base: np.ndarray
    valuation_slope: np.ndarray
    price_level: np.ndarray
    target_views: np.ndarray
    filters: np.ndarray
    patience: np.ndarray
    params: dict[str, np.ndarray]
    markup: float
    scale: float

    def subset(self, rows: np.ndarray) -> SessionPlan:
        """The plan of the sessions selected by `rows` (a boolean mask or indices)."""
        per_session = {
            f.name: getattr(self, f.name)[rows]
            for f in dataclasses.fields(self)
            if f.name not in ("params", "markup", "scale")
        }
        params = {name: values[rows] for name, values in self.params.items()}
        return dataclasses.replace(self, **per_session, params=params)

    def decision_quote(self, rows: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(relative quote, relative valuation) of sessions `rows` at engagement `s`."""
        g = -np.expm1(-s / self.scale)
        quote = self.price_level[rows] * (1.0 + self.markup * g)
        return quote, self.valuation_base[rows] + self.valuation_slope[rows] * g


@dataclass(frozen=True)
class Emissions:
    """Emitted interactions, session-major and in emission order within a session.

    Attributes:
        session: Session index of each event.
        event: Index into `constants.VOCABULARY`.
        product: Catalog index, -1 when the event concerns no product.
        page: Index into `PAGES`.
        interest: Item pages the session viewed before the latest one (its engagement s: drives
            the quote, and a cart event is quoted at the level of the item view that led to it).
    """

    session: np.ndarray
    event: np.ndarray
    product: np.ndarray
    page: np.ndarray
    interest: np.ndarray


class _State:
    """Mutable hidden state of all sessions (private to `run_sessions`)."""

    def __init__(self, plan: SessionPlan) -> None:
        n = plan.decides.size
        self.alive = np.ones(n, dtype=bool)
        self.phase = np.full(n, START, dtype=np.int8)
        self.patience = plan.patience.astype(np.int64).copy()
        self.committed = np.zeros(n, dtype=bool)  # reached the cart: patience no longer ends it
        self.filters_left = plan.filters.astype(np.int64).copy()
        self.filters_done = np.zeros(n, dtype=np.int64)
        self.viewed = np.zeros(n, dtype=np.int64)
        self.target = plan.target_views.astype(np.int64).copy()
        self.ptr = plan.start_ptr.astype(np.int64).copy()
        self.cur = np.full(n, -1, dtype=np.int64)
        self.cart = np.full(n, -1, dtype=np.int64)
        self.best = np.full(n, -1, dtype=np.int64)
        self.best_u = np.full(n, -np.inf)
        self.hovers = np.zeros(n, dtype=np.int64)
        self.where = np.full(n, LANDING, dtype=np.int64)  # page the session is on
        self.learned = np.zeros(n, dtype=bool)
        self.views = np.zeros(n, dtype=np.int64)
        self.level = np.zeros(n, dtype=np.int64)


def run_sessions(plan: SessionPlan, rng: np.random.Generator) -> Emissions:
    """Run the state machine of every session to its end.

    Args:
        plan: Initial state and parameters of the sessions.
        rng: Source of randomness.

    Returns:
        The emitted interactions (every session starts with `session_start`).
    """
    st = _State(plan)
    empty = np.zeros(0, dtype=np.int64)
    chunks: list[tuple[np.ndarray, ...]] = [(empty,) * len(dataclasses.fields(Emissions))]
    for _ in range(MAX_STEPS):
        if not st.alive.any():
            break
        chunks.append(_step(st, plan, rng))
    cols = [np.concatenate(c) for c in zip(*chunks, strict=True)]
    order = np.argsort(cols[0], kind="stable")
    return Emissions(*(c[order] for c in cols))


def merge_emissions(parts: list[tuple[Emissions, np.ndarray]]) -> Emissions:
    """One session-major `Emissions` from runs of disjoint session subsets, each given with the
    indices its sessions have in the whole (`SessionPlan.subset`'s rows)."""
    cols = [
        np.concatenate(values)
        for values in zip(
            *[(rows[em.session], em.event, em.product, em.page, em.interest) for em, rows in parts],
            strict=True,
        )
    ]
    order = np.argsort(cols[0], kind="stable")
    return Emissions(*(c[order] for c in cols))


def decision_views(em: Emissions, n_sessions: int) -> np.ndarray:
    """Per session, the index in `em` of its quoted view: the last item view before its first
    add-to-cart, else its last item view; -1 for a session without one. The market's banks
    quote a session at the same event (`market.bank`)."""
    index = np.arange(em.event.size)
    adds = em.event == _E[CART_LOCK_EVENT]
    first_add = np.full(n_sessions, em.event.size)
    np.minimum.at(first_add, em.session[adds], index[adds])
    views = (em.event == _E[QUOTE_EVENT]) & (index < first_add[em.session])
    quoted = np.full(n_sessions, -1)
    np.maximum.at(quoted, em.session[views], index[views])
    return quoted


def _buys(plan: SessionPlan, m: np.ndarray, level: np.ndarray) -> np.ndarray:
    """Which of the sessions `m`, settled on an item viewed after `level` product views, buy it:
    in the market and valuing it at least at its quote (`SessionPlan.decision_quote`)."""
    rows = np.flatnonzero(m)
    quote, valuation = plan.decision_quote(rows, level[rows].astype(np.float64))
    out = np.zeros(m.size, dtype=bool)
    out[rows] = plan.in_market[rows] & (valuation >= quote)
    return out


def _arrive(
    st: _State, m: np.ndarray, page: int, plan: SessionPlan, rng: np.random.Generator
) -> None:
    """Draw the hovers a session makes on a page it just arrived on."""
    lam = plan.params["hover_mean"][m] * _HOVER_SCALE[page]
    st.hovers[m] = rng.poisson(lam)
    st.where[m] = page


def _next_item(st: _State, m: np.ndarray, plan: SessionPlan, r: np.ndarray) -> None:
    """Move sessions `m` to their next item (or back to one already seen)."""
    n_products = plan.order.shape[1]
    seen = st.ptr - plan.start_ptr
    revisit = m & (seen > 0) & (r[:, 3] < plan.params["p_revisit"])
    fresh = m & ~revisit
    back = plan.start_ptr + np.floor(r[:, 4] * np.maximum(seen, 1)).astype(np.int64)
    pos = np.where(revisit, back, st.ptr) % n_products
    rows = np.flatnonzero(m)
    st.cur[rows] = plan.order[rows, pos[rows]]
    st.ptr[fresh] += 1
    st.viewed[fresh] += 1
    u = plan.utility[rows, st.cur[rows]]
    better = plan.affordable[rows, st.cur[rows]] & (u > st.best_u[rows])
    st.best[rows[better]] = st.cur[rows[better]]
    st.best_u[rows[better]] = u[better]
    st.learned[m] = False
    st.phase[m] = ITEM


def _step(st: _State, plan: SessionPlan, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Advance every live session by one event; return the emitted rows of this step."""
    n = st.alive.size
    p = plan.params
    e = np.full(n, -1, dtype=np.int64)
    page = np.full(n, -1, dtype=np.int64)
    r = rng.random((n, 5))
    todo = st.alive.copy()

    def emit(m: np.ndarray, code: int | np.ndarray, where: int | np.ndarray) -> None:
        e[m] = code if np.isscalar(code) else code[m]
        page[m] = where if np.isscalar(where) else where[m]

    m = todo & (st.phase == START)
    emit(m, _E["session_start"], LANDING)
    st.phase[m] = LIST
    _arrive(st, m, LANDING, plan, rng)
    todo &= ~m

    m = todo & (st.hovers > 0)
    kind = (r[:, 0:1] > _HOVER_CDF[st.phase]).sum(axis=1).clip(0, 3)
    emit(m, _HOVER_CODES[kind], st.where)
    st.hovers[m] -= 1
    todo &= ~m

    ended = np.zeros(n, dtype=bool)
    m = todo & (st.phase == CHECKOUT)
    abandon = m & (r[:, 1] < p["p_abandon"])
    ended |= abandon
    emit(m & ~abandon, _E["purchase_complete"], CHECKOUT_PAGE)
    ended |= m
    todo &= ~m

    m = todo & (st.phase == CART)
    rm = m & (r[:, 1] < p["p_remove"])
    emit(rm, _E["remove_item"], CART_PAGE)
    st.phase[rm] = LIST
    st.target[rm] = st.viewed[rm] + 1
    st.best[rm], st.best_u[rm] = -1, -np.inf
    _arrive(st, rm, SEARCH, plan, rng)
    co = m & ~rm
    emit(co, _E["checkout_start"], CART_PAGE)
    st.phase[co] = CHECKOUT
    _arrive(st, co, CHECKOUT_PAGE, plan, rng)
    todo &= ~m

    m = todo & (st.phase == LIST)
    f = m & (st.filters_left > 0)
    search = f & (st.filters_done == 0) & (r[:, 1] < p["p_search_first"])
    drawn = _FILTER_CODES[(r[:, 2:3] > plan.filter_cdf).sum(axis=1).clip(0, 4)]
    emit(f, np.where(search, _E["search"], drawn), SEARCH)
    st.filters_left[f] -= 1
    st.filters_done[f] += 1
    _arrive(st, f, SEARCH, plan, rng)
    noise = m & ~f & (r[:, 1] < p["p_noise"])
    emit(noise, _E["page_view"], np.where(r[:, 2] < 0.5, DEALS, LANDING))
    _arrive(st, noise, DEALS, plan, rng)
    st.where[noise] = page[noise]
    go = m & ~f & ~noise
    _next_item(st, go, plan, r)
    emit(go, _E["view_item_page"], ITEM_PAGE)
    _arrive(st, go, ITEM_PAGE, plan, rng)
    todo &= ~m

    m = todo & (st.phase == ITEM)
    learn = m & ~st.learned & (r[:, 1] < p["p_learn"])
    emit(learn, _E["learn_more_about_item"], ITEM_PAGE)
    st.learned[learn] = True
    _arrive(st, learn, ITEM_PAGE, plan, rng)
    d = m & ~learn
    done = d & ((st.viewed >= st.target) | (plan.decides & (st.patience <= 0)))
    ready = done & plan.decides & (st.best >= 0)
    settled = ready & (st.cur == st.best)
    add = settled & _buys(plan, settled, st.level)
    emit(add, _E["add_item_to_cart"], ITEM_PAGE)
    st.cart[add] = st.cur[add]
    st.phase[add] = CART
    st.committed |= add
    _arrive(st, add, CART_PAGE, plan, rng)
    to_best = ready & ~settled
    st.cur[to_best] = st.best[to_best]
    emit(to_best, _E["view_item_page"], ITEM_PAGE)
    _arrive(st, to_best, ITEM_PAGE, plan, rng)
    ended |= (done & ~plan.decides) | (settled & ~add)
    more = done & plan.decides & (st.best < 0)
    st.target[more] = st.viewed[more] + 1
    cont = d & ~done | more
    back = cont & (r[:, 2] < p["p_back"])
    emit(back, _E["page_view"], SEARCH)
    st.phase[back] = LIST
    st.filters_left[back] += r[back, 3] < p["p_refilter"][back]
    _arrive(st, back, SEARCH, plan, rng)
    direct = cont & ~back
    _next_item(st, direct, plan, r)
    emit(direct, _E["view_item_page"], ITEM_PAGE)
    _arrive(st, direct, ITEM_PAGE, plan, rng)

    out = np.flatnonzero(e >= 0)
    on_item = np.isin(
        e, (_E["view_item_page"], _E["learn_more_about_item"], _E["add_item_to_cart"])
    )
    on_item |= (page == ITEM_PAGE) & np.isin(e, _HOVER_CODES)
    in_cart = np.isin(e, (_E["remove_item"], _E["checkout_start"], _E["purchase_complete"]))
    product = np.where(on_item, st.cur, np.where(in_cart, st.cart, -1))
    st.cart[e == _E["remove_item"]] = -1
    views = e == _E["view_item_page"]
    st.level[views] = st.views[views]
    st.views += views
    st.patience -= e >= 0
    # Out of patience a session stops comparing; one that decides still decides (and checks out).
    st.alive &= ~ended & ((st.patience > 0) | st.committed | (plan.decides & (st.viewed > 0)))
    return out, e[out], product[out], page[out], st.level[out]
