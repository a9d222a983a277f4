//! Markup the sections share: a section's heading with its explanation, and a table's row of
//! plain column heads.

use leptos::prelude::*;

/// A section's `<h2>` (its `id` labels the section) and the paragraph that explains it.
#[component]
pub fn SectionHead(id: &'static str, title: &'static str, explain: &'static str) -> impl IntoView {
    view! {
        <h2 id=id>{title}</h2>
        <p class="explain">{explain}</p>
    }
}

/// `<tr>` of `<th scope="col">` cells, one per name.
pub fn column_heads(names: &'static [&'static str]) -> impl IntoView {
    view! { <tr>{names.iter().map(|name| view! { <th scope="col">{*name}</th> }).collect_view()}</tr> }
}
