//! Share links: golden strings, round trips, and a decoder that never panics.

use planner_core::edges::link::{decode, decode_lenient, encode};
use planner_core::input::bill::{Goals, PriceKind, RunBill};
use planner_core::input::calibration::{
    CalibrationSummary, FittedLink, GemmFit, CALIBRATION_VERSION,
};
use planner_core::input::finetune::{FineTune, FineTuneMode, LoraSettings, LoraTargets};
use planner_core::input::hardware::{gpu_presets, Cluster, GpuSpec, LinkSpec};
use planner_core::input::layout::{Layout, Recompute, Schedule, ZeroStage};
use planner_core::input::model::{AttentionWindow, FfnKind, MlaSpec, ModelSpec, MoeSpec, NormKind};
use planner_core::input::precision::{ComputeDtype, Precision, PrecisionRecipe};
use planner_core::input::scenario::{
    ActivationOptions, Measured, ModelChoice, Overheads, Scenario, ServeDtype, Serving, Training,
    SCENARIO_VERSION,
};
use planner_core::memory::engine_kv_pool::{EngineProfile, ServingEngine};
use planner_core::resolve::presets::{
    article_70b_scenario, article_mesh_scenario, default_scenario, model_presets,
};
use planner_core::time::collectives::{Collective, LinkDomain};
use planner_core::time::cost::GemmEfficiency;
use proptest::prelude::*;

#[test]
fn article_mesh_link_is_short_and_pinned() {
    let q = encode(&article_mesh_scenario());
    assert_eq!(
        q,
        "v=1&model=llama-3.1-70b&gpus=512&seq=32768&gbs=64&pp=4&cp=4&dp=4"
    );
    assert_eq!(decode(&q), Ok(article_mesh_scenario()));
}

#[test]
fn default_link_is_version_and_model() {
    assert_eq!(encode(&default_scenario()), "v=1&model=llama-3.1-70b");
    assert_eq!(decode(""), Ok(default_scenario()));
}

#[test]
fn article_70b_round_trips_as_custom() {
    let s = article_70b_scenario();
    let q = encode(&s);
    assert!(
        q.starts_with("v=1&model=custom&name=70B+model+%28article%29&layers=80&hidden=8192"),
        "{q}"
    );
    assert!(q.contains("&psi=70000000000&"), "{q}");
    assert_eq!(decode(&q), Ok(s));
}

#[test]
fn accepts_question_mark_and_full_urls() {
    let q = encode(&article_mesh_scenario());
    let want = Ok(article_mesh_scenario());
    assert_eq!(decode(&format!("?{q}")), want);
    assert_eq!(
        decode(&format!("https://example.org/meshplan/?{q}#top")),
        want
    );
    assert_eq!(decode(&format!("https://example.org/meshplan/#{q}")), want);
}

fn fields(r: Result<Scenario, Vec<planner_core::resolve::validate::FieldError>>) -> Vec<String> {
    r.err()
        .unwrap_or_default()
        .into_iter()
        .map(|e| e.field)
        .collect()
}

#[test]
fn strict_errors_name_the_parameter() {
    assert_eq!(fields(decode("v=1&tp=zero")), ["tp"]);
    assert_eq!(fields(decode("v=1&tp=0")), ["tp"]);
    assert_eq!(fields(decode("v=1&model=llama-9")), ["model"]);
    assert_eq!(fields(decode("v=1&colour=red")), ["colour"]);
    assert_eq!(fields(decode("v=1&tp=8&tp=4")), ["tp"]);
    assert_eq!(fields(decode("v=1&seq=0")), ["seq"]);
    assert_eq!(fields(decode("v=1&gpu=h100")), ["gpu"]);
    assert_eq!(fields(decode("v=1&layers=3")), ["layers"]);
    assert_eq!(fields(decode("v=1&gpus=12")), ["gpus"]);
    assert_eq!(
        fields(decode(
            "v=1&model=custom&layers=2&hidden=64&heads=4&vocab=100"
        )),
        ["ffn"]
    );
    // dp × tp × pp × cp = 64 × 8 > 64 GPUs.
    assert_eq!(fields(decode("v=1&dp=64")), ["dp"]);
}

#[test]
fn unknown_version_rejects_everything() {
    let (s, errors) = decode_lenient("v=2&tp=4&seq=8192");
    assert_eq!(s, default_scenario());
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].field, "v");
    assert!(errors[0].message.contains("'2'"));
    assert_eq!(fields(decode("v=2&tp=4")), ["v"]);
}

#[test]
fn lenient_falls_back_per_parameter() {
    let (s, errors) = decode_lenient("v=1&tp=banana&seq=8192&pp=0&frag=7&model=nope");
    let mut want = default_scenario();
    want.training.seq_len = 8192;
    assert_eq!(s, want);
    let mut got: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    got.sort_unstable();
    assert_eq!(got, ["frag", "model", "pp", "tp"]);
}

#[test]
fn custom_gpu_and_edited_preset_gpu_round_trip() {
    let mut s = article_mesh_scenario();
    s.cluster.gpu.memory_bytes = 96e9;
    s.cluster.inter_node.bytes_per_s = 47.5e9;
    let q = encode(&s);
    assert!(q.contains("gpu_mem=96000000000"), "{q}");
    assert!(q.contains("net_bw=47500000000"), "{q}");
    assert!(!q.contains("gpu="), "{q}");
    assert_eq!(decode(&q), Ok(s.clone()));

    s.cluster.gpu.id = "my-gpu".into();
    s.cluster.gpu.name = "My GPU 96 GB".into();
    let q = encode(&s);
    assert!(q.contains("gpu=my-gpu&gpu_name=My+GPU+96+GB"), "{q}");
    assert_eq!(decode(&q), Ok(s));
}

// ---------- property tests ----------

fn arb_custom_model() -> impl Strategy<Value = ModelSpec> {
    let shape = (
        "\\PC{0,24}",
        1u32..200,
        1u32..20_000,
        1u32..129,
        1u32..300,
        1u32..60_000,
        1u32..300_000,
        any::<[bool; 6]>(),
        0u32..4096,
    );
    let moe = proptest::option::of((1u32..300, 0u32..4, 1u32..5000, 0u32..4, 0u32..1000));
    let mla = proptest::option::of((0u32..2000, 1u32..1000, 1u32..128, 0u32..256, 1u32..256));
    let psi = proptest::option::of(1.0f64..1e13);
    let window = proptest::option::of((1u32..1_000_000, 0u32..300));
    (shape, moe, mla, psi, 0u32..1000, window).prop_map(
        |(
            (name, layers, hidden, heads, head_dim, ffn, vocab, b, pos),
            moe,
            mla,
            psi,
            kv,
            window,
        )| {
            ModelSpec {
                name,
                layers,
                hidden,
                heads,
                kv_heads: 1 + kv % heads,
                head_dim,
                ffn,
                ffn_kind: if b[0] {
                    FfnKind::SwiGlu
                } else {
                    FfnKind::GeluMlp
                },
                vocab,
                tied_embeddings: b[1],
                norm: if b[2] {
                    NormKind::RmsNorm
                } else {
                    NormKind::LayerNorm
                },
                dropout: b[3],
                qkv_bias: b[4],
                linear_bias: b[5],
                learned_positions: pos,
                moe: moe.map(|(experts, shared, effn, k, dense)| MoeSpec {
                    routed_experts: experts,
                    experts_per_token: 1 + k % experts,
                    shared_experts: shared,
                    expert_ffn: effn,
                    dense_layers: dense % (layers + 1),
                }),
                mla: mla.map(|(q, kv, rope, nope, v)| MlaSpec {
                    q_lora_rank: q,
                    kv_lora_rank: kv,
                    qk_rope_head_dim: rope,
                    qk_nope_head_dim: nope,
                    v_head_dim: v,
                }),
                attention_window: window.map(|(w, k)| AttentionWindow {
                    window_tokens: w,
                    full_every: k % (layers + 1),
                }),
                mtp_layers: kv % 2,
                nominal_params: psi,
            }
        },
    )
}

fn arb_model() -> impl Strategy<Value = ModelChoice> {
    let ids: Vec<String> = model_presets().iter().map(|p| p.id.to_string()).collect();
    prop_oneof![
        proptest::sample::select(ids).prop_map(ModelChoice::Preset),
        arb_custom_model().prop_map(ModelChoice::Custom),
    ]
}

fn arb_precision() -> impl Strategy<Value = Precision> {
    (
        proptest::sample::select(PrecisionRecipe::ALL.to_vec()),
        proptest::option::of((
            0.0f64..20.0,
            0.0f64..20.0,
            0.0f64..20.0,
            0.0f64..20.0,
            0.1f64..8.0,
            any::<bool>(),
        )),
    )
        .prop_map(|(recipe, edits)| {
            let mut p = Precision::from_recipe(recipe);
            if let Some((w, g, m, o, a, fp8)) = edits {
                p.weight_bytes = w;
                p.grad_bytes = g;
                p.master_bytes = m;
                p.optimizer_bytes = o;
                p.activation_bytes = a;
                p.compute = if fp8 {
                    ComputeDtype::Fp8
                } else {
                    ComputeDtype::Bf16
                };
            }
            p
        })
}

fn arb_gpu() -> impl Strategy<Value = GpuSpec> {
    let presets = gpu_presets();
    (
        proptest::sample::select(presets),
        proptest::option::of(("[a-z0-9-]{1,12}", "\\PC{0,20}")),
        proptest::option::of((
            1e9f64..1e12,
            1e11f64..1e14,
            1e12f64..1e16,
            0.0f64..1e16,
            1e9f64..1e13,
            1e8f64..1e12,
            1u32..17,
        )),
    )
        .prop_map(|(mut g, custom, edits)| {
            if let Some((id, name)) = custom {
                g.id = id;
                g.name = name;
            }
            if let Some((mem, hbm, bf16, fp8, nvl, net, gpn)) = edits {
                g.memory_bytes = mem;
                g.hbm_bytes_per_s = hbm;
                g.bf16_flops_per_s = bf16;
                g.fp8_flops_per_s = fp8;
                g.intra_node_bytes_per_s = nvl;
                g.inter_node_bytes_per_s = net;
                g.gpus_per_node = gpn;
            }
            g
        })
}

fn arb_cluster() -> impl Strategy<Value = Cluster> {
    (
        arb_gpu(),
        16u32..200,
        proptest::option::of(4u32..17),
        proptest::option::of((1e8f64..1e13, 0.0f64..1e-3, 1e8f64..1e12, 0.0f64..1e-3)),
        proptest::option::of((
            1e9f64..1e15,
            0.0f64..1e17,
            0.0f64..1e14,
            1e6f64..1e14,
            1u32..5000,
        )),
    )
        .prop_map(|(gpu, nodes, gpn, links, host)| {
            let mut c = Cluster::of(gpu, nodes);
            c.host =
                host.map(
                    |(ram, nvme, nvme_bw, link, cores)| planner_core::input::host::HostSpec {
                        ram_bytes: ram,
                        nvme_bytes: nvme,
                        nvme_read_bytes_per_s: nvme_bw,
                        nvme_write_bytes_per_s: nvme_bw / 2.0,
                        host_link_bytes_per_s: link,
                        cpu_cores: cores,
                    },
                );
            if let Some(gpn) = gpn {
                c.gpus_per_node = gpn;
            }
            if let Some((nb, nl, eb, el)) = links {
                c.intra_node = LinkSpec {
                    bytes_per_s: nb,
                    latency_s: nl,
                };
                c.inter_node = LinkSpec {
                    bytes_per_s: eb,
                    latency_s: el,
                };
            }
            c
        })
}

fn arb_layout() -> impl Strategy<Value = Layout> {
    (
        (
            1u32..5,
            1u32..5,
            1u32..5,
            1u32..5,
            1u32..5,
            1u32..5,
            1u32..5,
        ),
        proptest::sample::select(Schedule::ALL.to_vec()),
        proptest::sample::select(ZeroStage::ALL.to_vec()),
        proptest::sample::select(Recompute::ALL.to_vec()),
        (any::<bool>(), 1u32..5),
        arb_split(),
    )
        .prop_map(
            |((dp, tp, pp, cp, ep, vs, mbs), schedule, zero, recompute, (sp, etp), split)| Layout {
                dp,
                tp,
                pp,
                cp,
                ep,
                expert_tp: etp,
                virtual_stages: vs,
                micro_batch: mbs,
                schedule,
                zero,
                recompute,
                sequence_parallel: sp,
                stage_split: split,
            },
        )
}

/// Every kind of stage split, with counts up to the layer bound and lists up to 40 chunks.
fn arb_split() -> impl Strategy<Value = planner_core::input::layout::StageSplit> {
    use planner_core::input::layout::StageSplit;
    let count = 0u32..=planner_core::resolve::validate::MAX_LAYERS;
    prop_oneof![
        Just(StageSplit::Even),
        (
            proptest::option::of(count.clone()),
            proptest::option::of(count.clone())
        )
            .prop_map(|(first, last)| StageSplit::FirstLast { first, last }),
        (any::<bool>(), any::<bool>())
            .prop_map(|(embedding, loss)| StageSplit::AccountEmbeddingLoss { embedding, loss }),
        (count.clone(), count.clone())
            .prop_map(|(first, last)| StageSplit::LessLayers { first, last }),
        proptest::collection::vec(count, 1..40).prop_map(StageSplit::Chunks),
    ]
}

/// Any valid fine-tuning mode: adapters need at least one target, full training ignores them.
fn arb_finetune() -> impl Strategy<Value = FineTune> {
    (
        proptest::sample::select(FineTuneMode::ALL.to_vec()),
        1u32..=planner_core::base::bounds::LORA_RANK_MAX,
        1u32..=planner_core::base::bounds::LORA_ALPHA_MAX,
        any::<[bool; 7]>(),
    )
        .prop_map(|(mode, rank, alpha, mut flags)| {
            if mode != FineTuneMode::Full && !flags.iter().any(|&b| b) {
                flags[0] = true;
            }
            FineTune {
                mode,
                lora: LoraSettings {
                    rank,
                    alpha,
                    targets: LoraTargets::from_flags(flags),
                },
                virtual_tokens: 20,
            }
        })
}

fn arb_rest() -> impl Strategy<Value = (Training, ActivationOptions, Overheads, Serving)> {
    let dtypes = proptest::sample::select(ServeDtype::ALL.to_vec());
    (
        (1u32..1_000_000, 4u32..100_000, arb_finetune()),
        any::<[bool; 3]>(),
        (
            0.0f64..1e10,
            0.0f64..1e10,
            0.0f64..1e10,
            1u32..8,
            0.0f64..0.99,
            0.01f64..=1.0,
        ),
        (
            dtypes.clone(),
            dtypes,
            1u32..1_000_000,
            1u32..1000,
            1u32..9,
            1u32..9,
            0.01f64..=1.0,
            0.0f64..1e11,
            (
                any::<bool>(),
                proptest::option::of(0.01f64..=1.0),
                proptest::option::of((1u32..100_000, 1u32..5000, 0.0f64..1e10, 0.0f64..1e10)),
            ),
        ),
    )
        .prop_map(
            |(
                (seq, gbs, finetune),
                a,
                (ctx, nccl, bucket, z3, frag, usable),
                (w, kv, sctx, conc, stp, spp, util, ws, (sglang, memfrac, profile)),
            )| {
                (
                    Training {
                        seq_len: seq,
                        global_batch: gbs,
                        finetune,
                        offload: planner_core::input::offload::Offload::ALL
                            [gbs as usize % planner_core::input::offload::Offload::ALL.len()],
                        packing: seq % 2 == 0,
                    },
                    ActivationOptions {
                        flash_attention: a[0],
                        fp32_logits: a[1],
                        count_logits: a[2],
                    },
                    Overheads {
                        cuda_context_bytes: ctx,
                        nccl_buffer_bytes_per_group: nccl,
                        // Reuses the bucket draw: any buffer-sized value must round-trip.
                        cublas_workspace_bytes: bucket,
                        gradient_bucket_bytes: bucket,
                        zero3_units_in_flight: z3,
                        allocator_fraction: frag,
                        usable_fraction: usable,
                        framework: planner_core::input::framework::Framework::ALL
                            [z3 as usize % planner_core::input::framework::Framework::ALL.len()],
                        kernels: planner_core::input::kernels::Kernels::ALL
                            [bucket as usize % planner_core::input::kernels::Kernels::ALL.len()],
                        overlap: planner_core::input::overlap::OverlapChoice {
                            tp_comm: planner_core::input::overlap::Switch::ALL[z3 as usize % 3],
                            grad_reduce: planner_core::input::overlap::Switch::ALL
                                [ctx as usize % 3],
                            param_gather: planner_core::input::overlap::Switch::ALL
                                [nccl as usize % 3],
                            ep_comm: planner_core::input::overlap::Switch::ALL
                                [(z3 as usize + nccl as usize) % 3],
                        },
                        // Every routing form: dropless or a capacity (padded or not), with or
                        // without a measured load.
                        moe_routing: planner_core::input::moe_routing::MoeRouting {
                            capacity_factor: (z3 % 3 != 0).then_some(0.25 * f64::from(z3 % 9 + 4)),
                            pad_to_capacity: z3 % 3 == 2,
                            measured_busiest_load: (nccl as u64 % 2 == 1)
                                .then_some(1.0 + f64::from(z3 % 7) / 8.0),
                        },
                    },
                    Serving {
                        weight_dtype: w,
                        kv_dtype: kv,
                        context_len: sctx,
                        target_concurrency: conc,
                        tp: stp,
                        pp: spp,
                        memory_utilization: util,
                        workspace_bytes: ws,
                        engine: if sglang {
                            ServingEngine::Sglang
                        } else {
                            ServingEngine::Vllm
                        },
                        engine_profile: profile.map(|(t, n, non_torch, graphs)| EngineProfile {
                            max_num_batched_tokens: t,
                            max_num_seqs: n,
                            non_torch_bytes: non_torch,
                            cuda_graph_bytes: graphs,
                        }),
                        mem_fraction_static: memfrac,
                        // Drawn from the concurrency: a cap or none, each admission policy.
                        max_running_seqs: (conc % 3 != 0).then_some(conc % 4096 + 1),
                        speculation: (conc % 5 == 1).then(|| {
                            planner_core::input::speculation::Speculation {
                                method: planner_core::input::speculation::SpecMethod::ALL
                                    [conc as usize % 4],
                                draft_tokens: conc % 16 + 1,
                                acceptance: f64::from(conc % 97 + 1) / 100.0,
                                draft_params: Some(f64::from(conc % 1000 + 1) * 1e6),
                            }
                        }),
                        kv_admission: match conc % 3 {
                            0 => None,
                            1 => Some(planner_core::input::engine_scheduler::KvAdmission::WholeRequest),
                            _ => Some(
                                planner_core::input::engine_scheduler::KvAdmission::PromptThenPreempt,
                            ),
                        },
                    },
                )
            },
        )
}

fn arb_calibration() -> impl Strategy<Value = Option<Measured>> {
    let link = (
        0usize..Collective::ALL.len(),
        any::<bool>(),
        0.0f64..1e-3,
        1e6f64..1e12,
        0u32..100,
        0.0f64..2.0,
    )
        .prop_map(|(op, intra, latency_s, busbw, points, err)| FittedLink {
            op: Collective::ALL[op],
            domain: if intra {
                LinkDomain::IntraNode
            } else {
                LinkDomain::InterNode
            },
            latency_s,
            busbw_bytes_per_s: busbw,
            points,
            max_relative_error: err,
        });
    let gemm = (
        0.01f64..1.0,
        0.0f64..4096.0,
        1e12f64..1e16,
        0u32..100,
        0.0f64..1.0,
    )
        .prop_map(|(max_fraction, half_dim, peak, points, err)| GemmFit {
            efficiency: GemmEfficiency {
                max_fraction,
                half_dim,
            },
            peak_flops_per_s: peak,
            points,
            max_relative_error: err,
        });
    prop::option::of(
        (
            prop::collection::vec(link, 0..4),
            prop::option::of(gemm),
            any::<bool>(),
        )
            .prop_map(|(links, gemm, enabled)| Measured {
                summary: CalibrationSummary {
                    version: CALIBRATION_VERSION,
                    links,
                    gemm,
                },
                enabled,
            }),
    )
}

/// The run's bill: a token budget or steps (never both), each price and rate over its range.
fn arb_bill() -> impl Strategy<Value = RunBill> {
    (
        (
            prop::option::of(1e6f64..1e15),
            prop::option::of(1u64..10_000_000),
            0usize..PriceKind::ALL.len(),
            0.0f64..100.0,
            0.0f64..1e6,
            0.5f64..20.0,
        ),
        (
            0.0f64..1.0,
            1.0f64..3.0,
            0.0f64..20_000.0,
            prop::option::of(10.0f64..2_000.0),
            0.01f64..100.0,
            0.0f64..10_000.0,
            0.0f64..1e-3,
        ),
    )
        .prop_map(
            |(
                (tokens, steps, kind, usd, capex, years),
                (kwh, pue, node_w, board, gbs, restart, fail),
            )| {
                RunBill {
                    tokens,
                    steps: if tokens.is_some() { None } else { steps },
                    price_kind: PriceKind::ALL[kind],
                    usd_per_gpu_hour: usd,
                    capex_usd_per_gpu: capex,
                    amortisation_years: years,
                    usd_per_kwh: kwh,
                    pue,
                    node_overhead_w: node_w,
                    board_power_w: board,
                    checkpoint_write_gb_s_per_node: gbs,
                    restart_s: restart,
                    failures_per_gpu_hour: fail,
                    goals: Goals::default(),
                }
            },
        )
        .prop_flat_map(|bill| (Just(bill), arb_goals()))
        .prop_map(|(bill, goals)| RunBill { goals, ..bill })
}

/// The inverse questions' inputs: a deadline, an optional budget, listed node counts or none,
/// a request rate, optional latency bounds, listed GPU presets or none.
fn arb_goals() -> impl Strategy<Value = Goals> {
    let ids: Vec<String> = gpu_presets().into_iter().map(|g| g.id).collect();
    (
        0.01f64..3_000.0,
        prop::option::of(1.0f64..1e10),
        proptest::collection::vec(1u32..4_096, 0..6),
        0.001f64..1e5,
        prop::option::of(1.0f64..60_000.0),
        prop::option::of(1.0f64..1_000.0),
        proptest::sample::subsequence(ids, 0..4),
    )
        .prop_map(
            |(deadline_days, budget_usd, node_counts, rate_rps, ttft_ms, tpot_ms, fleet_gpus)| {
                Goals {
                    deadline_days,
                    budget_usd,
                    node_counts,
                    rate_rps,
                    ttft_ms,
                    tpot_ms,
                    fleet_gpus,
                }
            },
        )
}

fn arb_scenario() -> impl Strategy<Value = Scenario> {
    (
        arb_model(),
        arb_precision(),
        arb_cluster(),
        arb_layout(),
        arb_rest(),
        arb_calibration(),
        arb_bill(),
    )
        .prop_map(
            |(
                model,
                precision,
                cluster,
                layout,
                (training, activations, overheads, serving),
                calibration,
                bill,
            )| {
                Scenario {
                    version: SCENARIO_VERSION,
                    model,
                    precision,
                    cluster,
                    training,
                    layout,
                    activations,
                    overheads,
                    serving,
                    calibration,
                    bill,
                }
            },
        )
        .prop_filter("valid scenario", |s| s.validate().is_ok())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn encode_then_decode_is_identity(s in arb_scenario()) {
        let q = encode(&s);
        prop_assert_eq!(decode(&q), Ok(s.clone()), "{}", q);
        prop_assert_eq!(decode_lenient(&q), (s, vec![]));
    }

    #[test]
    fn decoder_never_panics_on_arbitrary_text(q in "\\PC{0,200}") {
        let _ = decode(&q);
        let _ = decode_lenient(&q);
    }

    #[test]
    fn decoder_never_panics_on_key_value_soup(
        pairs in proptest::collection::vec(("(v|model|tp|dp|pp|cp|ep|gpus|gpn|gpu|seq|layers|experts|kv_lora|psi|frag|[a-z_]{1,8})", "[-+.%0-9a-zA-Z]{0,12}"), 0..12)
    ) {
        let q: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let q = q.join("&");
        let _ = decode(&q);
        let (s, _) = decode_lenient(&q);
        // Whatever came in, the lenient result's model resolves or is reported.
        let _ = s.model_spec();
    }

    #[test]
    fn decoder_never_panics_on_mutated_links(
        s in arb_scenario(),
        cuts in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>(), 0u8..3), 1..6)
    ) {
        let mut bytes = encode(&s).into_bytes();
        for (at, b, op) in cuts {
            if bytes.is_empty() { break; }
            let i = at.index(bytes.len());
            match op {
                0 => bytes[i] = b,
                1 => { bytes.remove(i); }
                _ => bytes.insert(i, b),
            }
        }
        let q = String::from_utf8_lossy(&bytes).into_owned();
        let _ = decode(&q);
        let (lenient, errors) = decode_lenient(&q);
        if decode(&q).is_ok() {
            prop_assert!(errors.is_empty());
            prop_assert_eq!(decode(&q), Ok(lenient));
        }
    }
}

#[test]
fn validation_fields_are_link_parameters() {
    let names = planner_core::edges::link::parameter_names();
    for (i, n) in names.iter().enumerate() {
        assert!(!names[i + 1..].contains(n), "{n} twice");
    }
    // A scenario broken in every range at once reports only link parameter names.
    let mut s = default_scenario();
    s.version = 9;
    s.training.seq_len = 0;
    s.layout.tp = 0;
    s.overheads.usable_fraction = 2.0;
    s.serving.memory_utilization = 0.0;
    s.precision.weight_bytes = -1.0;
    s.cluster.gpu.memory_bytes = f64::NAN;
    s.cluster.intra_node.latency_s = -1.0;
    let mut m = planner_core::resolve::presets::model_preset("deepseek-v3").unwrap();
    m.heads = 0;
    m.moe.as_mut().unwrap().experts_per_token = 0;
    m.mla.as_mut().unwrap().kv_lora_rank = 0;
    s.model = ModelChoice::Custom(m);
    let errors = s.validate().unwrap_err();
    assert!(errors.len() >= 10, "{errors:?}");
    for e in errors {
        assert!(
            names.contains(&e.field.as_str()),
            "{} is not a link parameter",
            e.field
        );
    }
}

/// The bill's inputs and the inverse questions' ride in the link: each key set alone reads
/// back, and a bad value is refused naming its key, the scenario left as it was.
#[test]
fn bill_and_goal_keys_round_trip_and_refuse_naming_the_key() {
    use planner_core::edges::link::with_parameter;
    let base = article_mesh_scenario();
    let set = [
        ("bill_tok", "1.5e13"),
        ("bill_price", "owned"),
        ("bill_usd_h", "2.1"),
        ("bill_kwh", "0.12"),
        ("bill_pue", "1.2"),
        ("bill_ckpt_gbs", "4"),
        ("bill_restart_s", "600"),
        ("bill_fail", "2e-5"),
        ("bill_days", "54"),
        ("bill_budget", "60000000"),
        ("bill_nodes", "512,1024,2048"),
        ("fleet_rps", "25"),
        ("fleet_ttft_ms", "1500"),
        ("fleet_tpot_ms", ""),
        ("fleet_gpus", "h100-sxm,a100-80gb"),
    ];
    let mut s = base.clone();
    for (k, v) in set {
        s = with_parameter(&s, k, v).unwrap_or_else(|e| panic!("{k}={v}: {e:?}"));
    }
    let g = &s.bill.goals;
    assert_eq!(g.node_counts, vec![512, 1024, 2048]);
    assert_eq!(
        g.fleet_gpus,
        vec!["h100-sxm".to_string(), "a100-80gb".into()]
    );
    assert_eq!((g.deadline_days, g.budget_usd), (54.0, Some(6e7)));
    assert_eq!((g.ttft_ms, g.tpot_ms), (Some(1500.0), None));
    assert_eq!(s.bill.price_kind, PriceKind::Owned);
    let q = encode(&s);
    for key in [
        "bill_days=54",
        "bill_nodes=512%2C1024%2C2048",
        "fleet_gpus=h100-sxm%2Ca100-80gb",
        "fleet_tpot_ms=&",
    ] {
        assert!(q.contains(key), "{key} not in {q}");
    }
    assert_eq!(decode(&q), Ok(s.clone()));
    // Each bad value names its key; the scenario it was set on is unchanged.
    for (k, v) in [
        ("bill_days", "0"),
        ("bill_days", "soon"),
        ("bill_budget", "-5"),
        ("bill_nodes", "8,x"),
        ("bill_nodes", "0"),
        ("fleet_rps", "1e9"),
        ("fleet_ttft_ms", "-1"),
        ("fleet_gpus", "h100-sxm,<script>"),
        ("bill_pue", "0.5"),
        ("bill_price", "leased"),
    ] {
        let before = s.clone();
        let e = with_parameter(&s, k, v).expect_err(k);
        assert_eq!(e.field, k, "{k}={v}: {e:?}");
        assert_eq!(s, before);
        // A link with the bad value: refused naming the key.
        let errors = decode(&format!("{}&{k}={v}", encode(&base))).expect_err(k);
        assert!(errors.iter().any(|e| e.field == k), "{k}={v}: {errors:?}");
    }
}
