"""The market spec as people read it: every term with its source (docs/method.md#the-market)."""

from __future__ import annotations

from phantom_assets.market.spec import MarketSpec

__all__ = ["spec_markdown"]


def spec_markdown(
    spec: MarketSpec, half_width: float, w1: float, prefix_auc: dict[str, float]
) -> str:
    """Markdown table of the spec's terms, each with its source (logs, fitted, declared,
    empirical, kernel), and the quote-time prefix AUC of each bank kind."""
    human, agent = spec.banks
    src = spec.sources.get
    rows = [
        ("products (shares from the logs)", spec.n_products, src("product_weights", "")),
        ("anchor prices", f"{spec.anchor.min():.2f} - {spec.anchor.max():.2f}", src("anchor", "")),
        ("markups m (× the store's)", list(spec.markups), src("markup", "")),
        ("quote noise w", f"{spec.quote_noise:.4g}", src("quote_noise", "")),
        ("engagement signal", spec.signal, src("signal", "")),
        ("s0 / s_ref", f"{spec.engagement_scale:.3g} / {spec.reference_engagement:.3g}",
         f"{src('engagement_scale', '')} / {src('reference_engagement', '')}"),
        ("valuation N(μ, σ) × anchor, human / agent",
         f"N({spec.mu_human:g}, {spec.sigma_human:g}) / N({spec.mu_agent:g}, {spec.sigma_agent:g})",
         src("valuation", "")),
        ("cost p_low / cap p_high (× anchor)", f"{spec.cost_share:g} / {spec.price_cap:g}",
         src("cost_share", "")),
        ("sessions per class, human / agent", f"{human.size:,} / {agent.size:,}", spec.bank),
        ("engagement at the quote, human / agent (mean)",
         f"{human.engagement.mean():.2f} / {agent.engagement.mean():.2f}", spec.bank),
        ("agent score f, human / agent (mean)",
         f"{human.score.mean():.3f} / {agent.score.mean():.3f}", spec.bank),
        *((f"prefix AUC, {kind} bank", f"{value:.3f}", "out of fold" if kind == "empirical"
           else "in model") for kind, value in prefix_auc.items()),
        ("base levels × detector δ", f"{list(spec.base_levels)} × {list(spec.detector_strengths)}",
         "action grid"),
        ("K nominal / robust", f"{spec.nominal_k} / {list(spec.robust_k_set)}", "declared"),
        ("ε (W1 radius) → α half-width", f"{spec.ambiguity_radius_w1:g} → {half_width:.3f} "
         f"(W1 {w1:.3f})", "declared"),
    ]  # fmt: skip
    body = "\n".join(f"| {name} | {value} | {source} |" for name, value, source in rows)
    return f"| term | value | source |\n|---|---|---|\n{body}"
