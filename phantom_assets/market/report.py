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
        (
            "markups m (the store's own first)",
            f"{spec.store_markup:.3g}; grid {[round(m, 3) for m in spec.markups]}",
            src("markup", ""),
        ),
        ("quote noise w", f"{spec.quote_noise:.4g}", src("quote_noise", "")),
        ("engagement signal", spec.signal, src("signal", "")),
        (
            "s0 / s_ref",
            f"{spec.engagement_scale:.3g} / {spec.reference_engagement:.3g}",
            f"{src('engagement_scale', '')} / {src('reference_engagement', '')}",
        ),
        (
            "human valuation μ + β·g(s) + σ·z (× anchor), s0 of g",
            f"{spec.mu_human:.3g} + {spec.beta_human:.3g}·g(s) + {spec.sigma_human:.3g}·z, "
            f"s0 {spec.valuation_scale:.3g}",
            src("valuation", ""),
        ),
        ("in the market (π)", f"{spec.in_market:.3g}", src("in_market", "")),
        ("what an agent's principal pays", spec.agent_valuation, src("agent_valuation", "")),
        (
            "replicates of the store's sample (episodes draw one)",
            spec.replicates,
            "logs" if spec.replicates else "none",
        ),
        (
            "cost p_low / cap p_high (× anchor)",
            f"{spec.cost_share:g} / {spec.price_cap:g}",
            src("cost_share", ""),
        ),
        ("sessions per class, human / agent", f"{human.size:,} / {agent.size:,}", spec.bank),
        (
            "engagement at the quote, human / agent (mean)",
            f"{human.engagement.mean():.2f} / {agent.engagement.mean():.2f}",
            spec.bank,
        ),
        (
            "agent score f, human / agent (mean)",
            f"{human.score.mean():.3f} / {agent.score.mean():.3f}",
            spec.bank,
        ),
        (
            "quote-time detector (τ)",
            f"{spec.detector} (τ {spec.detector_threshold:.3g}; kernel-only τ "
            f"{spec.kernel_detector_threshold:.3g})",
            "configured (`market.detector`)",
        ),
        *(
            (
                f"prefix AUC, {kind.replace('_', ' ')} bank",
                f"{value:.3f}",
                "in model" if kind == "kernel" else "out of fold",
            )
            for kind, value in prefix_auc.items()
        ),
        (
            "base levels × detector δ",
            f"{[round(v, 3) for v in spec.base_levels]} × "
            f"{[round(d, 3) for d in spec.detector_strengths]}",
            "action grid (centred on the best responses)",
        ),
        (
            "K nominal / robust",
            f"{spec.agents.nominal_k} / {list(spec.agents.robust_k_set)}",
            "declared",
        ),
        (
            "ε (W1 radius) → α half-width",
            f"{spec.agents.ambiguity_radius_w1:g} → {half_width:.3f} (W1 {w1:.3f})",
            "declared",
        ),
    ]
    body = "\n".join(f"| {name} | {value} | {source} |" for name, value, source in rows)
    return f"| term | value | source |\n|---|---|---|\n{body}"
