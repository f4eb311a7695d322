"""The one home of PHANTOM's vocabulary, grids and coefficients.

Every other module imports these names; nothing else spells an event name, a store, a grid or a
coefficient literally. Changing a value here changes the code version of every asset using it.
"""

from __future__ import annotations

from typing import Final

# --- stores, actors, labels --------------------------------------------------------------------
STORES: Final[tuple[str, ...]] = ("hotel", "airline")
LEGACY_STORE: Final[str] = "shop"  # accepted only when configured (Settings.accept_legacy_store)
ACTORS: Final[tuple[str, ...]] = ("human", "agent")
UNKNOWN_ACTOR: Final[str] = "unknown"
LABEL_SOURCES: Final[tuple[str, ...]] = ("experiment", "actor_column", "none")

# --- record types ------------------------------------------------------------------------------
INTERACTION: Final[str] = "interaction"
PRICE_LOG: Final[str] = "price_log"
RECORD_TYPES: Final[tuple[str, ...]] = (INTERACTION, PRICE_LOG)
# A price-log record's event name: the price the shop quoted a session for one product.
PRICE_QUOTE_EVENT: Final[str] = "price_quote"

# --- canonical event vocabulary (docs/method.md#canonical-events) -------------------------------
# The order fixes the kernel's row/column order.
SESSION_EVENTS: Final[tuple[str, ...]] = ("session_start",)
NAVIGATION_EVENTS: Final[tuple[str, ...]] = ("page_view", "view_item_page", "learn_more_about_item")
CART_EVENTS: Final[tuple[str, ...]] = (
    "add_item_to_cart",
    "remove_item",
    "checkout_start",
    "purchase_complete",
)
FILTER_EVENTS: Final[tuple[str, ...]] = (
    "search",
    "filter_for_date",
    "filter_for_amenities",
    "filter_for_price",
    "sort_change",
)
HOVER_EVENTS: Final[tuple[str, ...]] = (
    "hover_over_title",
    "hover_over_paragraph",
    "hover_over_link",
    "hover_over_button",
)
VOCABULARY: Final[tuple[str, ...]] = (
    SESSION_EVENTS + NAVIGATION_EVENTS + CART_EVENTS + FILTER_EVENTS + HOVER_EVENTS
)
START_TOKEN: Final[str] = "<start>"
END_TOKEN: Final[str] = "<end>"
# Kernel state labels: <start>, the 17 events, <end>. Rows = sources, columns = destinations.
KERNEL_STATES: Final[tuple[str, ...]] = (START_TOKEN, *VOCABULARY, END_TOKEN)

# Legacy / client-side spellings seen in exports, mapped onto the canonical names. Anything not
# canonical and not listed here is quarantined with reason "unknown_event" -- never guessed.
EVENT_ALIASES: Final[dict[str, str]] = {
    "start": "session_start",
    "session": "session_start",
    "pageview": "page_view",
    "view": "view_item_page",
    "view_item": "view_item_page",
    "item_view": "view_item_page",
    "learn_more": "learn_more_about_item",
    "add_to_cart": "add_item_to_cart",
    "add_cart": "add_item_to_cart",
    "remove_from_cart": "remove_item",
    "checkout": "checkout_start",
    "begin_checkout": "checkout_start",
    "purchase": "purchase_complete",
    "order_complete": "purchase_complete",
    "filter_date": "filter_for_date",
    "filter_amenities": "filter_for_amenities",
    "filter_price": "filter_for_price",
    "sort": "sort_change",
    "hover_title": "hover_over_title",
    "hover_paragraph": "hover_over_paragraph",
    "hover_link": "hover_over_link",
    "hover_button": "hover_over_button",
    "price_shown": PRICE_QUOTE_EVENT,
    "price_log": PRICE_QUOTE_EVENT,
}
ADMIN_PAGE_PREFIX: Final[str] = "/admin/"

# --- quarantine reasons (machine-readable; docs/method.md#bad-input) ------------------------------
QUARANTINE_REASONS: Final[tuple[str, ...]] = (
    "missing_session_id",
    "unparseable_timestamp",
    "unknown_event",
    "unknown_store",
    "legacy_store",
    "malformed_json",
    "malformed_row",
    "duplicate_event",
    "field_too_long",
    "invalid_encoding",
    "invalid_price",
)
MAX_FIELD_CHARS: Final[int] = 65_536  # any single text field longer than this is quarantined

# --- demand proxy weights, keyed by the real event names (docs/method.md#contamination-generator)
DEMAND_WEIGHT_BY_CATEGORY: Final[dict[str, float]] = {
    "cart": 4.0,
    "dwell": 2.0,
    "navigation": 1.0,
    "filter": 0.5,
}
DEMAND_WEIGHTS: Final[dict[str, float]] = {
    **{e: DEMAND_WEIGHT_BY_CATEGORY["cart"] for e in CART_EVENTS},
    **{e: DEMAND_WEIGHT_BY_CATEGORY["dwell"] for e in HOVER_EVENTS},
    **{e: DEMAND_WEIGHT_BY_CATEGORY["navigation"] for e in NAVIGATION_EVENTS + SESSION_EVENTS},
    **{e: DEMAND_WEIGHT_BY_CATEGORY["filter"] for e in FILTER_EVENTS},
}

# --- store prices from price logs (docs/method.md#store-prices-from-the-price-logs) ---------------
# Interactions that show a product's price; each is followed (same session, a few ms later) by a
# price log. Cart and checkout events repeat the price locked at the item view.
PRICED_EVENTS: Final[tuple[str, ...]] = (
    "view_item_page",
    "add_item_to_cart",
    "checkout_start",
    "purchase_complete",
)
QUOTE_EVENT: Final[str] = "view_item_page"  # the interaction whose price logs fit the price model
# A session is quoted when it views the product, and the cart locks that price: its quoted view
# (the market's and the demand's unit of a purchase decision) is its last QUOTE_EVENT before its
# first CART_LOCK_EVENT.
CART_LOCK_EVENT: Final[str] = "add_item_to_cart"
# Candidate engagement signals a store may price on: weights over the canonical vocabulary, summed
# over a session's interactions BEFORE the quoted view. Cross-validation picks one per store
# (`market.prices`); the market computes engagement at the quote with the selected weights.
# "none" (no markup) is first: a markup is only claimed when it beats "none" by one standard error.
ENGAGEMENT_SIGNALS: Final[dict[str, dict[str, float]]] = {
    "none": dict.fromkeys(VOCABULARY, 0.0),
    "product_views": {e: float(e == QUOTE_EVENT) for e in VOCABULARY},
    "events": dict.fromkeys(VOCABULARY, 1.0),
    "demand_proxy": DEMAND_WEIGHTS,
}
NO_MARKUP_SIGNAL: Final[str] = "none"
# Price-log cleaning: a quote above FACTOR × or below 1/FACTOR × its product's median is absurd; a
# log more than MAX_QUOTE_DELAY_MS after the last interaction showing its product is unmatched.
ABSURD_PRICE_FACTOR: Final[float] = 100.0
MAX_QUOTE_DELAY_MS: Final[int] = 1_000
PRICE_EXCLUSION_REASONS: Final[tuple[str, ...]] = (
    "missing_product",
    "invalid_price",
    "absurd_price",
    "no_showing_interaction",
    "duplicate_quote",
)

# --- fingerprinting defaults -------------------------------------------------------------------
DEFAULT_KAPPA: Final[float] = 0.5
DEFAULT_FOLDS: Final[int] = 5
DEFAULT_TEMPERATURE: Final[float] = 1.0
MIN_EVENTS_FOR_KERNEL: Final[int] = 2
ROW_SUM_TOLERANCE: Final[float] = 1e-9

# --- canonical columns (docs/architecture.md#column-contracts) ------------------------------------
CANONICAL_COLUMNS: Final[tuple[str, ...]] = (
    "event_id",
    "batch_id",
    "source_row",
    "session_id",
    "experiment_id",
    "store",
    "ts",
    "event",
    "page",
    "product_id",
    "price",
    "record_type",
    "user_agent",
    "metadata",
    "actor",
    "label_source",
    "ts_source",
)

# --- evaluation splits and the gate's references (docs/method.md#promotion-gate) ------------------
# The store's own pricing and the best undefended response: every candidate is compared with them.
HEURISTIC_TIERS: Final[tuple[str, ...]] = ("static", "tuned", "defended", "surge", "linear")
LEARNABLE_TIERS: Final[tuple[str, ...]] = ("qtable", "ppo", "a2c", "dqn")
GATE_REFERENCE_TIERS: Final[tuple[str, ...]] = ("static", "tuned")
# Stress rows of the selection seeds choose the band's worst alpha and the gate's candidate; rows
# of the held-out test seeds only test it.
SELECTION_SPLIT: Final[str] = "selection"
TEST_SPLIT: Final[str] = "test"
STRESS_SPLITS: Final[tuple[str, ...]] = (SELECTION_SPLIT, TEST_SPLIT)
