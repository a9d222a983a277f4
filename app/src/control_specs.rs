//! A scenario input as data: its label, link parameter, hint, how it reads its value from the
//! scenario and writes it back. The input panel and the serving inputs are tables of these;
//! [`ScenarioControl`] draws one with the control of `inputs` its kind names.

use leptos::prelude::*;
use planner_core::input::scenario::Scenario;

use crate::app::Ctx;
use crate::inputs::{DecimalField, NumberField, Select, StepSlider, Toggle};

/// A whole number with a unit.
pub struct NumberSpec {
    pub label: &'static str,
    pub field: &'static str,
    pub unit: &'static str,
    pub hint: &'static str,
    pub get: fn(&Scenario) -> u32,
    pub put: fn(&mut Scenario, u32),
}

/// A positive decimal with a unit, typed in steps of `step`.
pub struct DecimalSpec {
    pub label: &'static str,
    pub field: &'static str,
    pub unit: &'static str,
    pub hint: &'static str,
    pub step: &'static str,
    pub get: fn(&Scenario) -> f64,
    pub put: fn(&mut Scenario, f64),
}

/// One of a list of `(id, label)` options. `put` writes the chosen id and says whether it
/// read (an id it does not know leaves the scenario untouched).
pub struct ChoiceSpec {
    pub label: &'static str,
    pub field: &'static str,
    pub hint: &'static str,
    pub options: Options,
    pub get: fn(&Scenario) -> String,
    pub put: fn(&mut Scenario, &str) -> bool,
}

/// Where a choice's options come from.
pub enum Options {
    /// The same list for every scenario.
    Fixed(fn() -> Vec<(String, String)>),
    /// A list that follows the scenario; the select keeps its element and updates only the
    /// options that change.
    Of(fn(&Scenario) -> Vec<(String, String)>),
}

/// A checkbox.
pub struct ToggleSpec {
    pub label: &'static str,
    pub field: &'static str,
    pub hint: &'static str,
    pub get: fn(&Scenario) -> bool,
    pub put: fn(&mut Scenario, bool),
}

/// A slider over the values `steps` allows for the scenario.
pub struct SliderSpec {
    pub label: &'static str,
    pub field: &'static str,
    pub hint: &'static str,
    pub steps: fn(&Scenario) -> Vec<u32>,
    pub get: fn(&Scenario) -> u32,
    pub put: fn(&mut Scenario, u32),
}

/// One line of a panel: a control, or a view of its own (a derived figure, a group of
/// controls shown only for some scenarios).
pub enum Control {
    Number(NumberSpec),
    Decimal(DecimalSpec),
    Choice(ChoiceSpec),
    Toggle(ToggleSpec),
    Slider(SliderSpec),
    View(fn() -> AnyView),
}

/// A [`Control::Number`] of the scenario's field at `path` (`training.seq_len`).
macro_rules! number {
    ($label:literal, $field:literal, $unit:literal, $($path:ident).+, $hint:literal) => {
        $crate::control_specs::Control::Number($crate::control_specs::NumberSpec {
            label: $label,
            field: $field,
            unit: $unit,
            hint: $hint,
            get: |sc| sc.$($path).+,
            put: |sc, v| sc.$($path).+ = v,
        })
    };
}

/// A [`Control::Toggle`] of the scenario's field at `path`.
macro_rules! toggle {
    ($label:literal, $field:literal, $($path:ident).+, $hint:literal) => {
        $crate::control_specs::Control::Toggle($crate::control_specs::ToggleSpec {
            label: $label,
            field: $field,
            hint: $hint,
            get: |sc| sc.$($path).+,
            put: |sc, v| sc.$($path).+ = v,
        })
    };
}

/// A [`Control::Choice`] of the scenario's field at `path`, whose type lists its values in
/// `ALL`, each with its `id()` and `label()`, and reads an id back with `from_id`.
macro_rules! enum_choice {
    ($label:literal, $field:literal, $ty:ident, $($path:ident).+, $hint:literal) => {
        $crate::control_specs::Control::Choice($crate::control_specs::ChoiceSpec {
            label: $label,
            field: $field,
            hint: $hint,
            options: $crate::control_specs::Options::Fixed(|| {
                $crate::control_specs::options_of(&$ty::ALL, |x| x.id().to_string(), |x| {
                    x.label().to_string()
                })
            }),
            get: |sc| sc.$($path).+.id().to_string(),
            put: |sc, id| $ty::from_id(id).map(|x| sc.$($path).+ = x).is_some(),
        })
    };
}

/// A [`Control::Slider`] of the scenario's field at `path`, over the values `steps` gives.
macro_rules! slider {
    ($label:literal, $field:literal, $($path:ident).+, $steps:expr, $hint:literal) => {
        $crate::control_specs::Control::Slider($crate::control_specs::SliderSpec {
            label: $label,
            field: $field,
            hint: $hint,
            steps: $steps,
            get: |sc| sc.$($path).+,
            put: |sc, v| sc.$($path).+ = v,
        })
    };
}

pub(crate) use {enum_choice, number, slider, toggle};

/// Options `(id, label)` of every value of a list.
pub fn options_of<T>(
    all: &[T],
    id: impl Fn(&T) -> String,
    label: impl Fn(&T) -> String,
) -> Vec<(String, String)> {
    all.iter().map(|x| (id(x), label(x))).collect()
}

/// The control `spec` describes, reading and writing the page's scenario.
#[component]
pub fn ScenarioControl(spec: &'static Control) -> impl IntoView {
    let s = expect_context::<Ctx>().scenario;
    match spec {
        Control::Number(c) => {
            let (get, put) = (c.get, c.put);
            view! {
                <NumberField
                    label=c.label
                    field=c.field
                    unit=c.unit
                    hint=c.hint
                    value=Signal::derive(move || s.with(get))
                    on_change=Callback::new(move |v| s.update(|sc| put(sc, v)))
                />
            }
            .into_any()
        }
        Control::Decimal(c) => {
            let (get, put) = (c.get, c.put);
            view! {
                <DecimalField
                    label=c.label
                    field=c.field
                    unit=c.unit
                    hint=c.hint
                    step=c.step
                    value=Signal::derive(move || s.with(get))
                    on_change=Callback::new(move |v| s.update(|sc| put(sc, v)))
                />
            }
            .into_any()
        }
        Control::Choice(c) => {
            let (get, put) = (c.get, c.put);
            let options = match c.options {
                Options::Fixed(all) => Signal::stored(all()),
                Options::Of(of) => Memo::new(move |_| s.with(of)).into(),
            };
            view! {
                <Select
                    label=c.label
                    field=c.field
                    hint=c.hint
                    options=options
                    value=Signal::derive(move || s.with(get))
                    on_change=Callback::new(move |id: String| s.maybe_update(|sc| put(sc, &id)))
                />
            }
            .into_any()
        }
        Control::Toggle(c) => {
            let (get, put) = (c.get, c.put);
            view! {
                <Toggle
                    label=c.label
                    field=c.field
                    hint=c.hint
                    value=Signal::derive(move || s.with(get))
                    on_change=Callback::new(move |v| s.update(|sc| put(sc, v)))
                />
            }
            .into_any()
        }
        Control::Slider(c) => {
            let (steps, get, put) = (c.steps, c.get, c.put);
            view! {
                <StepSlider
                    label=c.label
                    field=c.field
                    hint=c.hint
                    steps=Signal::derive(move || s.with(steps))
                    value=Signal::derive(move || s.with(get))
                    on_change=Callback::new(move |v| s.update(|sc| put(sc, v)))
                />
            }
            .into_any()
        }
        Control::View(view) => view(),
    }
}

/// A table of controls, in order.
#[component]
pub fn ScenarioControls(specs: &'static [Control]) -> impl IntoView {
    specs
        .iter()
        .map(|spec| view! { <ScenarioControl spec=spec /> })
        .collect_view()
}
