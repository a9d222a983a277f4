//! Input controls. Each has a label, a visible one-line hint, the same text as
//! its `title` (hover) and, under it, every rule the current value breaks,
//! named by the share-link parameter it belongs to. Values are never clamped
//! silently: a value that breaks a rule stays and is flagged.

use leptos::prelude::*;

/// One message shown at a control (planner-core's issue list builds them).
pub use planner_core::view::issues::Issue;

/// All current issues, provided as context by the app.
#[derive(Clone, Copy)]
pub struct Issues(pub Memo<Vec<Issue>>);

/// The messages for one field, rendered under its control.
#[component]
pub fn FieldIssues(field: &'static str) -> impl IntoView {
    let issues = use_context::<Issues>().map(|i| i.0);
    // A memo: a move that leaves this field's messages as they were reruns nothing here.
    let mine = Memo::new(move |_| {
        issues
            .map(|m| {
                m.with(|all| {
                    all.iter()
                        .filter(|i| i.field == field)
                        .cloned()
                        .collect::<Vec<_>>()
                })
            })
            .unwrap_or_default()
    });
    view! {
        {move || {
            mine.get()
                .into_iter()
                .map(|i| {
                    let class = if i.error { "issue error" } else { "issue warning" };
                    view! {
                        <p class=class data-testid=format!("issue-{field}") role="status">
                            {if i.error { "✗ " } else { "⚠ " }}
                            {i.message}
                        </p>
                    }
                })
                .collect_view()
        }}
    }
}

/// What every control shows under its input: its hint, then the field's issues.
#[component]
fn ControlFoot(hint: &'static str, field: &'static str) -> impl IntoView {
    view! {
        <p class="hint">{hint}</p>
        <FieldIssues field=field />
    }
}

fn has_error(field: &'static str) -> impl Fn() -> bool + Copy {
    let issues = use_context::<Issues>().map(|i| i.0);
    // A memo: the control's class is set only when its own verdict changes.
    let bad = Memo::new(move |_| {
        issues.is_some_and(|m| m.with(|all| all.iter().any(|i| i.field == field && i.error)))
    });
    move || bad.get()
}

/// A control's value held in a memo. Values are derived from the whole scenario: without
/// one, a move of any other input would rerun this control's closures and re-set its DOM.
fn own_value<T: Clone + PartialEq + Send + Sync + 'static>(value: Signal<T>) -> Memo<T> {
    Memo::new(move |_| value.get())
}

/// A whole-number field with a unit.
#[component]
pub fn NumberField(
    label: &'static str,
    field: &'static str,
    unit: &'static str,
    hint: &'static str,
    #[prop(into)] value: Signal<u32>,
    on_change: Callback<u32>,
    #[prop(default = 1)] min: u32,
) -> impl IntoView {
    let local_error = RwSignal::new(None::<String>);
    let value = own_value(value);
    view! {
        <NumberFrame label=label field=field unit=unit hint=hint local_error=local_error>
            <input
                id=format!("in-{field}")
                type="number"
                inputmode="numeric"
                min=min
                step="1"
                title=hint
                data-testid=format!("input-{field}")
                prop:value=move || value.get().to_string()
                on:input=move |ev| {
                    let text = event_target_value(&ev);
                    match text.trim().parse::<u32>() {
                        Ok(v) if v >= min => {
                            local_error.set(None);
                            on_change.run(v);
                        }
                        _ => local_error.set(Some(format!("enter a whole number ≥ {min}"))),
                    }
                }
            />
        </NumberFrame>
    }
}

/// A decimal field (GB, fractions) with a unit.
#[component]
pub fn DecimalField(
    label: &'static str,
    field: &'static str,
    unit: &'static str,
    hint: &'static str,
    #[prop(into)] value: Signal<f64>,
    on_change: Callback<f64>,
    #[prop(default = "any")] step: &'static str,
) -> impl IntoView {
    let local_error = RwSignal::new(None::<String>);
    let value = own_value(value);
    view! {
        <NumberFrame label=label field=field unit=unit hint=hint local_error=local_error>
            <input
                id=format!("in-{field}")
                type="number"
                step=step
                title=hint
                data-testid=format!("input-{field}")
                prop:value=move || value.get().to_string()
                on:input=move |ev| {
                    match event_target_value(&ev).trim().parse::<f64>() {
                        Ok(v) if v.is_finite() && v > 0.0 => {
                            local_error.set(None);
                            on_change.run(v);
                        }
                        _ => local_error.set(Some("enter a positive number".into())),
                    }
                }
            />
        </NumberFrame>
    }
}

/// What a number field shows around its input: the label, the unit, the hint, the message
/// when the text typed is refused, and the field's issues.
#[component]
fn NumberFrame(
    label: &'static str,
    field: &'static str,
    unit: &'static str,
    hint: &'static str,
    local_error: RwSignal<Option<String>>,
    children: Children,
) -> impl IntoView {
    let bad = has_error(field);
    view! {
        <div class="control" class:invalid=move || bad() || local_error.get().is_some()>
            <label for=format!("in-{field}") title=hint>{label}</label>
            <div class="number">
                {children()}
                <span class="unit">{unit}</span>
            </div>
            <p class="hint">{hint}</p>
            {move || local_error.get().map(|m| view! { <p class="issue error" role="status">{m}</p> })}
            <FieldIssues field=field />
        </div>
    }
}

/// Candidate slider positions: powers of two up to `max`, plus the current
/// value if it is not one (a link may carry any value; it is kept, not snapped).
pub fn power_of_two_steps(max: u32, current: u32) -> Vec<u32> {
    let mut steps: Vec<u32> = std::iter::successors(Some(1u32), |v| v.checked_mul(2))
        .take_while(|v| *v <= max.max(1))
        .collect();
    if !steps.contains(&current) {
        steps.push(current);
        steps.sort_unstable();
    }
    steps
}

/// A slider over a list of allowed values (powers of two, divisors).
#[component]
pub fn StepSlider(
    label: &'static str,
    field: &'static str,
    hint: &'static str,
    #[prop(into)] steps: Signal<Vec<u32>>,
    #[prop(into)] value: Signal<u32>,
    on_change: Callback<u32>,
) -> impl IntoView {
    let id = format!("in-{field}");
    let bad = has_error(field);
    let value = own_value(value);
    let steps = own_value(steps);
    let index = move || {
        let v = value.get();
        steps.with(|s| s.iter().position(|x| *x == v).unwrap_or(0))
    };
    view! {
        <div class="control slider" class:invalid=bad>
            <label for=id.clone() title=hint>
                {label}
                " "
                <output data-testid=format!("value-{field}")>{move || value.get()}</output>
            </label>
            <input
                id=id
                type="range"
                min="0"
                step="1"
                title=hint
                data-testid=format!("input-{field}")
                max=move || steps.with(|s| s.len().saturating_sub(1))
                prop:value=move || index().to_string()
                aria-valuetext=move || value.get().to_string()
                on:input=move |ev| {
                    if let Ok(i) = event_target_value(&ev).parse::<usize>() {
                        if let Some(v) = steps.with_untracked(|s| s.get(i).copied()) {
                            on_change.run(v);
                        }
                    }
                }
            />
            <ControlFoot hint=hint field=field />
        </div>
    }
}

/// A select over `(id, label)` options.
#[component]
pub fn Select(
    label: &'static str,
    field: &'static str,
    hint: &'static str,
    #[prop(into)] options: Signal<Vec<(String, String)>>,
    #[prop(into)] value: Signal<String>,
    on_change: Callback<String>,
) -> impl IntoView {
    let id = format!("in-{field}");
    let bad = has_error(field);
    let value = own_value(value);
    view! {
        <div class="control" class:invalid=bad>
            <label for=id.clone() title=hint>{label}</label>
            <select
                id=id
                title=hint
                data-testid=format!("input-{field}")
                prop:value=move || value.get()
                on:change=move |ev| on_change.run(event_target_value(&ev))
            >
                // Rebuilt only when the list changes (the stage splits change with PP); the
                // select element itself stays.
                {move || {
                    options
                        .get()
                        .into_iter()
                        .map(|(v, l)| {
                            let v2 = v.clone();
                            view! {
                                <option value=v selected=move || value.get() == v2>
                                    {l}
                                </option>
                            }
                        })
                        .collect_view()
                }}
            </select>
            <ControlFoot hint=hint field=field />
        </div>
    }
}

/// A checkbox.
#[component]
pub fn Toggle(
    label: &'static str,
    field: &'static str,
    hint: &'static str,
    #[prop(into)] value: Signal<bool>,
    on_change: Callback<bool>,
) -> impl IntoView {
    let id = format!("in-{field}");
    let for_id = id.clone();
    let value = own_value(value);
    view! {
        <div class="control toggle">
            <label for=for_id title=hint>
                <input
                    id=id
                    type="checkbox"
                    title=hint
                    data-testid=format!("input-{field}")
                    prop:checked=move || value.get()
                    on:change=move |ev| on_change.run(event_target_checked(&ev))
                />
                " "
                {label}
            </label>
            <ControlFoot hint=hint field=field />
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::power_of_two_steps;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn slider_steps_keep_odd_values_from_links() {
        assert_eq!(power_of_two_steps(64, 8), vec![1, 2, 4, 8, 16, 32, 64]);
        assert_eq!(power_of_two_steps(64, 6), vec![1, 2, 4, 6, 8, 16, 32, 64]);
        assert_eq!(power_of_two_steps(8, 128), vec![1, 2, 4, 8, 128]);
        assert_eq!(power_of_two_steps(0, 1), vec![1]);
    }
}
