"""How humans and LLM agents pursue a task: behaviour and timing parameters, and their blend.

`HUMAN` and `AGENT` hold the default behavioural gap. `blend(s)` interpolates every parameter
linearly between them (log-scale for medians), so `blend(0.0) == HUMAN` exactly -- the identical
setting used by honesty tests -- and `blend(1.0) == AGENT`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

__all__ = [
    "AGENT",
    "AGENT_REFERRERS",
    "AGENT_USER_AGENTS",
    "HUMAN",
    "HUMAN_REFERRERS",
    "HUMAN_USER_AGENTS",
    "BehaviourProfile",
    "blend",
]


@dataclass(frozen=True)
class BehaviourProfile:
    """Parameters of the task-driven state machine and of the inter-event timing.

    Attributes:
        hover_mean: Mean number of hovers per page visit (Poisson; scaled per page kind).
        p_learn: Probability of opening "learn more" on an item page.
        p_back: Probability of going back to the listing (page_view) between two items.
        p_revisit: Probability that the next item is one already viewed (back and forth).
        p_refilter: Probability of filtering again after going back to the listing.
        p_search_first: Probability that the first listing action is a free-text search.
        filters_mean: Mean number of filter/sort/search actions at the start (Poisson).
        compare_mean: Mean number of items compared before deciding.
        p_noise: Probability per listing step of a stray page_view (deals page, home).
        p_remove: Probability of removing the cart item again (hesitation).
        p_abandon: Probability of abandoning at checkout.
        patience_median: Median number of actions before giving up (lognormal).
        order_noise: Noise on the order in which items are examined (0 = strictly by utility).
        gap_median_s: Median inter-event gap in seconds.
        gap_sigma: Lognormal sigma of the inter-event gap.
        p_burst: Probability that a hover comes in a fast burst.
        burst_median_s: Median gap of a burst hover in seconds.
        p_long: Probability of a long distraction gap.
        long_median_s: Median of a long distraction gap in seconds.
    """

    hover_mean: float
    p_learn: float
    p_back: float
    p_revisit: float
    p_refilter: float
    p_search_first: float
    filters_mean: float
    compare_mean: float
    p_noise: float
    p_remove: float
    p_abandon: float
    patience_median: float
    order_noise: float
    gap_median_s: float
    gap_sigma: float
    p_burst: float
    burst_median_s: float
    p_long: float
    long_median_s: float


HUMAN = BehaviourProfile(
    hover_mean=2.0,
    p_learn=0.35,
    p_back=0.65,
    p_revisit=0.25,
    p_refilter=0.3,
    p_search_first=0.45,
    filters_mean=1.2,
    compare_mean=3.0,
    p_noise=0.08,
    p_remove=0.12,
    p_abandon=0.12,
    patience_median=45.0,
    order_noise=1.0,
    gap_median_s=4.5,
    gap_sigma=1.0,
    p_burst=0.6,
    burst_median_s=0.7,
    p_long=0.04,
    long_median_s=60.0,
)
AGENT = BehaviourProfile(
    hover_mean=0.04,
    p_learn=0.7,
    p_back=0.1,
    p_revisit=0.0,
    p_refilter=0.0,
    p_search_first=0.9,
    filters_mean=2.5,
    compare_mean=3.0,
    p_noise=0.0,
    p_remove=0.01,
    p_abandon=0.02,
    patience_median=120.0,
    order_noise=0.1,
    gap_median_s=0.8,
    gap_sigma=0.3,
    p_burst=0.0,
    burst_median_s=0.7,
    p_long=0.0,
    long_median_s=60.0,
)
_LOG_SCALE = frozenset({"patience_median", "gap_median_s", "burst_median_s", "long_median_s"})


def blend(separability: float) -> BehaviourProfile:
    """Agent behaviour at a given separability.

    Args:
        separability: 0 = exactly human, 1 = the default agent profile.

    Returns:
        The interpolated profile (log-linear for medians, linear otherwise).

    Raises:
        ValueError: if `separability` is outside [0, 1].
    """
    if not 0.0 <= separability <= 1.0:
        raise ValueError(f"separability must be in [0, 1], got {separability!r}")
    if separability == 0.0:
        return HUMAN
    values = {}
    for field in dataclasses.fields(BehaviourProfile):
        h, a = getattr(HUMAN, field.name), getattr(AGENT, field.name)
        if field.name in _LOG_SCALE:
            values[field.name] = math.exp(
                (1 - separability) * math.log(h) + separability * math.log(a)
            )
        else:
            values[field.name] = (1 - separability) * h + separability * a
    return BehaviourProfile(**values)


# (string, weight) pools. Agents use automation-ish strings about half of the time, else a plain
# desktop browser string -- the user agent alone must not reveal them.
HUMAN_USER_AGENTS: tuple[tuple[str, float], ...] = (
    (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/125.0.0.0 Safari/537.36",
        0.34,
    ),
    (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
        "Version/17.4 Safari/605.1.15",
        0.18,
    ),
    (
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
        "Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
        0.16,
    ),
    (
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/125.0.0.0 Mobile Safari/537.36",
        0.12,
    ),
    ("Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:126.0) Gecko/20100101 Firefox/126.0", 0.1),
    (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/125.0.0.0 Safari/537.36 Edg/125.0.0.0",
        0.1,
    ),
)
AGENT_USER_AGENTS: tuple[tuple[str, float], ...] = (
    (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "HeadlessChrome/125.0.0.0 Safari/537.36",
        0.3,
    ),
    (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/125.0.6422.26 Safari/537.36 Playwright/1.44",
        0.12,
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ChatGPT-User/1.0; "
        "+https://openai.com/bot)",
        0.08,
    ),
    (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/125.0.0.0 Safari/537.36",
        0.3,
    ),
    (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/124.0.0.0 Safari/537.36",
        0.2,
    ),
)
HUMAN_REFERRERS: tuple[tuple[str, float], ...] = (
    ("https://www.google.com/", 0.42),
    ("direct", 0.25),
    ("https://www.bing.com/", 0.08),
    ("https://www.tripadvisor.com/", 0.1),
    ("https://www.kayak.com/", 0.08),
    ("https://www.instagram.com/", 0.07),
)
AGENT_REFERRERS: tuple[tuple[str, float], ...] = (
    ("direct", 0.8),
    ("https://www.google.com/", 0.15),
    ("https://www.bing.com/", 0.05),
)
