//! Topology view: the article's figure of nodes × GPUs, each GPU coloured by
//! its group of one kind (TP, CP, EP, DP, PP) for the current layout, with the
//! traffic of that group drawn where it runs: a bar under a node for traffic
//! inside it (on the node's link: NVLink, or PCIe where the GPUs have none), arcs
//! between nodes for traffic over the network. A
//! group that leaves a node when it should not (TP) is outlined as a warning.
//! Everything comes from planner-core's `figures::topology_map`.

use leptos::prelude::*;
use planner_core::input::scenario::Scenario;
use planner_core::view::topology::{topology, GroupTraffic, TopologyMap};
use planner_core::view::GroupKind;

use crate::app::Ctx;
use crate::format;
use crate::perf::timed;
use crate::views::markup::{column_heads, SectionHead};
use crate::views::visibility::section_inputs;

const CELL: f64 = 14.0;
const GAP: f64 = 2.0;
const PAD: f64 = 6.0;
/// GPU cells per row inside a node box.
const CELLS_PER_ROW: u32 = 8;
/// Width of the figure's coordinate space.
const FIGURE_W: f64 = 1000.0;

/// Group kinds one can colour by, with their label.
const COLOUR_BY: [(GroupKind, &str); 5] = [
    (GroupKind::Tp, "TP"),
    (GroupKind::Cp, "CP"),
    (GroupKind::Ep, "EP"),
    (GroupKind::Dp, "DP"),
    (GroupKind::Pp, "PP"),
];

/// A distinct hue per group ordinal (golden angle, so neighbours differ).
fn group_colour(ordinal: u64) -> String {
    let hue = (ordinal as f64 * 137.508) % 360.0;
    format!("hsl({hue:.0}, 62%, 52%)")
}

/// DP traffic runs over the DP × CP ranks (topology.rs: the `dp` entry carries no bytes).
fn traffic_of(map: &TopologyMap, kind: GroupKind) -> Option<&GroupTraffic> {
    let k = if kind == GroupKind::Dp {
        GroupKind::DpCp
    } else {
        kind
    };
    map.traffic.iter().find(|t| t.kind == k)
}

struct Geometry {
    cols: u32,
    box_w: f64,
    box_h: f64,
}

fn geometry(map: &TopologyMap) -> Geometry {
    let slots = map.gpus.iter().filter(|g| g.node == 0).count().max(1) as u32;
    let per_row = slots.min(CELLS_PER_ROW);
    let rows_per_node = slots.div_ceil(per_row);
    let box_w = f64::from(per_row) * (CELL + GAP) - GAP + 2.0 * PAD;
    // Room for the label on top and the intra-node bar below.
    let box_h = f64::from(rows_per_node) * (CELL + GAP) - GAP + 2.0 * PAD + 22.0;
    let cols = ((FIGURE_W / (box_w + 18.0)).floor() as u32).clamp(1, 16);
    Geometry { cols, box_w, box_h }
}

fn node_origin(g: &Geometry, node: u32) -> (f64, f64) {
    let col = node % g.cols;
    let row = node / g.cols;
    (
        f64::from(col) * (g.box_w + 18.0) + 4.0,
        f64::from(row) * (g.box_h + 18.0) + 4.0,
    )
}

/// What the hover line says about one drawn GPU.
fn gpu_text(map: &TopologyMap, i: usize, kind: GroupKind) -> String {
    let Some(c) = map.gpus.get(i) else {
        return String::new();
    };
    match (&c.rank, &c.coords) {
        (Some(r), Some(k)) => format!(
            "rank {r} (node {}, GPU {}): TP {} · CP {} · DP {} · PP {} · EP {}; {} group {}",
            c.node,
            c.slot,
            k.tp,
            k.cp,
            k.dp,
            k.pp,
            k.ep,
            kind.id().to_ascii_uppercase(),
            c.groups.get(kind.index()).copied().unwrap_or(0)
        ),
        _ => format!("node {}, GPU {}: idle", c.node, c.slot),
    }
}

/// The figure's viewBox, label and inner SVG.
fn svg_figure(map: &TopologyMap, kind: GroupKind) -> (String, String, String) {
    use std::fmt::Write;
    let g = geometry(map);
    let drawn = map.drawn_nodes.max(1);
    let rows = drawn.div_ceil(g.cols);
    let height = f64::from(rows) * (g.box_h + 18.0) + 8.0;
    let width = f64::from(g.cols.min(drawn)) * (g.box_w + 18.0) + 8.0;
    let traffic = traffic_of(map, kind);
    let warned = map.warnings.iter().any(|w| w.kind == kind);
    let mut out = String::with_capacity(map.gpus.len() * 200);
    for n in 0..map.drawn_nodes {
        let (x, y) = node_origin(&g, n);
        let _ = write!(
            out,
            r#"<g class="topo-node" data-node="{n}"><rect class="topo-box" x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" rx="5"></rect><text class="topo-label" x="{:.1}" y="{:.1}">node {n}</text>"#,
            g.box_w,
            g.box_h,
            x + PAD,
            y + 12.0
        );
        if traffic.is_some_and(|t| t.intra_node_nodes.contains(&n)) {
            let _ = write!(
                out,
                r#"<rect class="topo-nvlink" x="{:.1}" y="{:.1}" width="{:.1}" height="3.5" rx="1.5"><title>traffic of this group inside the node ({})</title></rect>"#,
                x + PAD,
                y + g.box_h - 7.0,
                g.box_w - 2.0 * PAD,
                map.intra_node_link
            );
        }
        out.push_str("</g>");
    }
    // Cells carry their index only: the hover line reads the rest from the map.
    for (i, c) in map.gpus.iter().enumerate() {
        let (x0, y0) = node_origin(&g, c.node);
        let x = x0 + PAD + f64::from(c.slot % CELLS_PER_ROW) * (CELL + GAP);
        let y = y0 + 16.0 + f64::from(c.slot / CELLS_PER_ROW) * (CELL + GAP);
        let ordinal = c.groups.get(kind.index()).copied();
        let fill = ordinal.map_or_else(|| "var(--idle)".to_string(), group_colour);
        let class = if warned && c.rank.is_some() {
            "topo-gpu warn"
        } else {
            "topo-gpu"
        };
        let _ = write!(
            out,
            r#"<rect class="{class}" x="{x:.1}" y="{y:.1}" width="{CELL}" height="{CELL}" rx="2" style="fill: {fill}" data-i="{i}" data-group="{}"></rect>"#,
            ordinal.map(|o| o.to_string()).unwrap_or_default(),
        );
    }
    if let Some(t) = traffic {
        for &(a, b) in &t.inter_node_edges {
            let (ax, ay) = node_origin(&g, a);
            let (bx, by) = node_origin(&g, b);
            let (ax, ay) = (ax + g.box_w / 2.0, ay + g.box_h - 2.0);
            let (bx, by) = (bx + g.box_w / 2.0, by + g.box_h - 2.0);
            let mx = (ax + bx) / 2.0;
            let my = ay.max(by) + 14.0 + (bx - ax).abs().min(60.0) * 0.15;
            let class = if warned {
                "topo-edge warn"
            } else {
                "topo-edge"
            };
            let _ = write!(
                out,
                r#"<path class="{class}" d="M {ax:.1} {ay:.1} Q {mx:.1} {my:.1} {bx:.1} {by:.1}"><title>network traffic between node {a} and node {b}</title></path>"#
            );
        }
    }
    (
        format!("0 0 {width:.0} {height:.0}"),
        format!(
            "{} nodes × {} GPUs coloured by {} group",
            map.drawn_nodes,
            map.gpus_per_node,
            kind.id().to_ascii_uppercase()
        ),
        out,
    )
}

/// The scenario's placement, or none without a model.
type Map = Memo<Option<TopologyMap>>;

/// The topology section.
#[component]
pub fn TopologyView() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let (section, scenario, model) = section_inputs(ctx.scenario);
    let colour_by = RwSignal::new(GroupKind::Tp);
    let map = Memo::new(move |_| {
        model.with(|m| {
            m.as_ref()
                .ok()
                .map(|model| scenario.with(|s| timed("topology_map", || topology(s, model))))
        })
    });
    let hovered = RwSignal::new(None::<usize>);

    view! {
        <section node_ref=section class="view" aria-labelledby="topology-title" data-testid="topology-view">
            <SectionHead id="topology-title" title="Where the groups run" explain="The cluster as nodes of GPUs, ranks placed in Megatron's order (TP fastest, then CP, DP, PP). Each GPU takes the colour of its group of the chosen kind; a bar under a node marks that group's traffic inside it (on NVLink, or on PCIe for GPUs without NVLink), an arc between nodes its traffic over the network. Tensor parallelism talks every layer, so it belongs inside a node: a TP group that spans nodes is outlined in red." />
            <div class="topo-controls" role="group" aria-label="Colour GPUs by">
                <span class="hint">"Colour by:"</span>
                {COLOUR_BY
                    .iter()
                    .map(|&(k, label)| view! {
                        <button
                            aria-pressed=move || (colour_by.get() == k).to_string()
                            data-testid=format!("topo-by-{}", k.id())
                            on:click=move |_| colour_by.set(k)
                        >
                            {label}
                        </button>
                    })
                    .collect::<Vec<_>>()}
            </div>
            {move || map.with(|m| m.as_ref().map(|map| {
                let warns = map.warnings.iter().map(|w| view! {
                    <p class="issue warn" data-testid="topology-warning">{w.message.clone()}</p>
                }).collect::<Vec<_>>();
                view! {
                    {map.note.clone().map(|n| view! { <p class="hint" data-testid="topology-note">{n}</p> })}
                    {warns}
                }
            }))}
            <p class="derived" data-testid="topology-caption">
                {move || {
                    let kind = colour_by.get();
                    map.with(|m| m.as_ref().map(|map| caption(map, kind)).unwrap_or_default())
                }}
            </p>
            <div class="topo-scroll"><TopologyFigure map=map colour_by=colour_by hovered=hovered /></div>
            <GpuSheet scenario=scenario />
            <p class="hint topo-hover" data-testid="topology-hover">
                {move || {
                    let kind = colour_by.get();
                    match hovered.get() {
                        None => "Point at a GPU for its rank and coordinates.".to_string(),
                        Some(i) => map.with(|m| m.as_ref().map(|map| gpu_text(map, i, kind)).unwrap_or_default()),
                    }
                }}
            </p>
            <ul class="legend">
                <li><span class="swatch topo-sw-nvlink"></span>{move || map.with(|m| format!("traffic inside a node ({})", m.as_ref().map_or("NVLink", |map| map.intra_node_link.as_str())))}</li>
                <li><span class="swatch topo-sw-net"></span>"traffic between nodes (network)"</li>
                <li><span class="swatch topo-sw-warn"></span>"group that should stay in a node but does not"</li>
                <li><span class="swatch topo-sw-idle"></span>"idle GPU"</li>
            </ul>
            <GroupsTable map=map />
        </section>
    }
}

/// What a group of `kind` is and carries, or that there is none.
fn caption(map: &TopologyMap, kind: GroupKind) -> String {
    let gpn = map.gpus_per_node;
    match traffic_of(map, kind) {
            Some(t) => format!(
                "{} groups of {} GPUs ({} per node over {} node{}): {} per GPU per step on {}, {} on the network",
                format::thousands(map.world_size / t.placement.size.max(1)),
                t.placement.size,
                t.placement.per_node.min(u64::from(gpn)),
                t.placement.nodes,
                if t.placement.nodes == 1 { "" } else { "s" },
                format::bytes(t.intra_node_bytes_per_step),
                map.intra_node_link,
                format::bytes(t.inter_node_bytes_per_step),
            ),
            None => format!("{} = 1: every GPU is its own group, no traffic", kind.id().to_ascii_uppercase()),
        }
}

/// The nodes and their GPUs, coloured by group of `colour_by`; `hovered` follows the pointer.
#[component]
fn TopologyFigure(
    map: Map,
    colour_by: RwSignal<GroupKind>,
    hovered: RwSignal<Option<usize>>,
) -> impl IntoView {
    // Built as one SVG string: a few hundred cells redraw in one DOM write per input.
    let figure = Memo::new(move |_| {
        let kind = colour_by.get();
        map.with(|m| {
            m.as_ref()
                .map(|map| timed("topology_svg", || svg_figure(map, kind)))
        })
    });
    move || {
        figure.with(|f| match f {
            None => view! { <p class="issue error">"No model: nothing to place."</p> }.into_any(),
            Some((view_box, label, inner)) => view! {
                <svg
                    class="topo-figure"
                    data-testid="topology-figure"
                    viewBox=view_box.clone()
                    role="img"
                    aria-label=label.clone()
                    inner_html=inner.clone()
                    on:mouseover=move |ev: web_sys::MouseEvent| {
                        use wasm_bindgen::JsCast;
                        let i = ev
                            .target()
                            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                            .and_then(|e| e.get_attribute("data-i"))
                            .and_then(|v| v.parse::<usize>().ok());
                        hovered.set(i);
                    }
                ></svg>
            }
            .into_any(),
        })
    }
}

/// The GPU's datasheet, folded.
#[component]
fn GpuSheet(scenario: Memo<Scenario>) -> impl IntoView {
    view! {
        <details data-testid="gpu-sheet">
            <summary>{move || scenario.with(|s| format!("{} datasheet", s.cluster.gpu.name))}</summary>
            <dl>
                {move || scenario.with(|s| {
                    planner_core::view::gpu_sheet::gpu_sheet(&s.cluster.gpu)
                        .into_iter()
                        .map(|r| view! { <dt>{r.label}</dt><dd>{r.value}</dd> })
                        .collect::<Vec<_>>()
                })}
            </dl>
        </details>
    }
}

/// Each group kind's size, placement, link and bytes per step.
#[component]
fn GroupsTable(map: Map) -> impl IntoView {
    let summary = move || {
        map.with(|m| {
            let Some(map) = m else { return Vec::new() };
            map.traffic
                .iter()
                .filter(|t| t.kind != GroupKind::Dp)
                .map(|t| {
                    let p = &t.placement;
                    let name = match t.kind {
                        GroupKind::DpCp => "DP × CP (gradients, ZeRO)".to_string(),
                        GroupKind::ExpertDp => "expert DP".to_string(),
                        GroupKind::ExpertTp => "expert TP".to_string(),
                        k => k.id().to_ascii_uppercase(),
                    };
                    let warn = map.warnings.iter().find(|w| w.kind == t.kind);
                    view! {
                        <tr class:warn=warn.is_some() data-testid=format!("topo-group-{}", t.kind.id())>
                            <th scope="row">{name}</th>
                            <td>{p.size}</td>
                            <td>{format::thousands(t.groups)}</td>
                            <td>{format!("{} per node × {} node{}", p.per_node, p.nodes, if p.nodes == 1 { "" } else { "s" })}</td>
                            <td>{match p.domain.id() {
                                "intra_node" => map.intra_node_link.clone(),
                                "inter_node" => "network".to_string(),
                                "hierarchical" => format!("{} + network", map.intra_node_link),
                                _ => "—".to_string(),
                            }}</td>
                            <td>{format::bytes(t.intra_node_bytes_per_step)}</td>
                            <td>{format::bytes(t.inter_node_bytes_per_step)}</td>
                            <td>{warn.map(|w| w.message.clone()).unwrap_or_else(|| if t.crosses_nodes { "crosses nodes (expected)".into() } else { String::new() })}</td>
                        </tr>
                    }
                })
                .collect::<Vec<_>>()
        })
    };
    view! {
        <div class="table-scroll">
            <table data-testid="topology-groups">
                <thead>
                    {column_heads(&["Group", "Size", "Groups", "Placement", "Runs on", "In-node bytes/step", "Network bytes/step", "Note"])}
                </thead>
                <tbody>{summary}</tbody>
            </table>
        </div>
    }
}
