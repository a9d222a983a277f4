//! The error band beside a predicted figure: planner-core's
//! [`planner_core::edges::error_band`] for the scenario on the page (the median miss of the
//! published runs nearest it, or a note that the figure is an extrapolation).

use leptos::prelude::*;
use planner_core::edges::error_band::{band_scenario, builtin_band, BandKind, ErrorBand};

use crate::app::Ctx;

/// The band of `kind` for the page's scenario, recomputed as the scenario changes.
pub fn band_memo(ctx: Ctx, kind: BandKind) -> Memo<Option<ErrorBand>> {
    Memo::new(move |_| {
        let params_b = ctx.model.with(|m| {
            m.as_ref()
                .ok()
                .map(|m| m.param_breakdown().total() as f64 / 1e9)
        })?;
        ctx.scenario
            .with(|s| builtin_band(kind, &band_scenario(s, params_b)))
    })
}

/// "±18%" or "extrapolation", short, for beside a figure.
pub fn short(b: &ErrorBand) -> String {
    if b.extrapolation.is_some() {
        "extrapolation".to_string()
    } else {
        format!("±{:.0}%", b.relative * 100.0)
    }
}

/// The band beside a figure: its short form, the whole sentence as the tooltip.
#[component]
pub fn BandNote(kind: BandKind, testid: &'static str) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let band = band_memo(ctx, kind);
    view! {
        <span
            class="error-band"
            class:extrapolation=move || band.with(|b| b.as_ref().is_some_and(|b| b.extrapolation.is_some()))
            data-testid=testid
            title=move || band.with(|b| b.as_ref().map(|b| b.text.clone()).unwrap_or_default())
            hidden=move || band.with(Option::is_none)
        >
            {move || band.with(|b| b.as_ref().map(short).unwrap_or_default())}
        </span>
        <span class="error-band-text" data-testid=format!("{testid}-text")>
            {move || band.with(|b| b.as_ref().map(|b| format!(" ({})", b.text)).unwrap_or_default())}
        </span>
    }
}
