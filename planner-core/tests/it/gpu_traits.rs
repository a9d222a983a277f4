//! One record per GPU: each preset states its traits in input/gpu_presets/, the ones that
//! share a fabric or a die share those traits and no more, and a GPU whose id names no
//! preset takes the custom defaults.

use planner_core::input::gpu_traits::CUSTOM_GPU_TRAITS;
use planner_core::input::hardware::{gpu_preset, gpu_presets, gpu_traits, GpuSpec};
use planner_core::input::link_efficiency::{NDR_400G_NIC_SHARE, NVLINK4_NVSWITCH};

fn traits_of(id: &str) -> &'static planner_core::input::gpu_traits::GpuTraits {
    gpu_preset(id).expect("preset").traits()
}

#[test]
fn every_preset_has_its_own_record_with_a_cited_link_share() {
    for gpu in gpu_presets() {
        let t = gpu.traits();
        assert!(
            !std::ptr::eq(t, gpu_traits("no-such-gpu")),
            "{} falls back to the custom record",
            gpu.id
        );
        assert!(
            t.links.intra_node.is_some(),
            "{}: no intra-node share",
            gpu.id
        );
    }
    assert_eq!(gpu_traits("my-gpu"), &CUSTOM_GPU_TRAITS);
}

#[test]
fn h100_and_h200_share_the_nvlink4_traits_and_a100_does_not() {
    let (h100, h200, a100) = (
        traits_of("h100-sxm"),
        traits_of("h200"),
        traits_of("a100-80gb"),
    );
    assert_eq!(h100.links, h200.links);
    assert_eq!(h100.links.intra_node, Some(NVLINK4_NVSWITCH));
    assert_eq!(h100.links.inter_node, Some(NDR_400G_NIC_SHARE));
    assert_eq!(h100.nccl, h200.nccl);
    assert!(h100.nccl.is_some_and(|n| n.nvls));
    assert!(h100.serving.custom_all_reduce && h200.serving.custom_all_reduce);
    assert_ne!(a100.links, h100.links);
    assert!(a100.nccl.is_some_and(|n| !n.nvls));
    assert!(!a100.serving.custom_all_reduce);
}

#[test]
fn measurements_stay_on_the_gpus_they_were_taken_on() {
    // H800 has the H100's NVSwitch (its NVLink shares) but vLLM's custom all-reduce was
    // measured on H100 only; the FP8 decode-GEMM share was measured on H100 SXM, not H200.
    let (h100, h200, h800) = (traits_of("h100-sxm"), traits_of("h200"), traits_of("h800"));
    assert_eq!(h800.links, h100.links);
    assert!(!h800.serving.custom_all_reduce);
    assert!(h100.serving.fp8_weight_stream && !h200.serving.fp8_weight_stream);
    // The power cap is the 96 GB H100's alone.
    for gpu in gpu_presets() {
        let capped = gpu.traits().compute.tensor_fraction_at_power_limit < 1.0;
        assert_eq!(capped, gpu.id == "h100-96gb", "{}", gpu.id);
    }
}

#[test]
fn traits_follow_the_id_through_a_file_and_not_the_figures() {
    let mut gpu = gpu_preset("h200").expect("preset");
    gpu.memory_bytes = 100e9;
    let json = serde_json::to_string(&gpu).expect("serialises");
    assert!(!json.contains("traits"), "{json}");
    let read: GpuSpec = serde_json::from_str(&json).expect("parses");
    assert_eq!(read.traits(), traits_of("h200"));
    // The same figures under another id are a custom GPU: no server, line-rate links.
    gpu.id = "my-gpu".into();
    assert_eq!(gpu.traits(), &CUSTOM_GPU_TRAITS);
    assert!(gpu.traits().host.is_none() && gpu.traits().links.intra_node.is_none());
}
