use planner_core::cost::{CostOptions, StepModel};
use planner_core::hardware::{gpu_preset, Cluster};
use planner_core::layout::{Layout, Recompute, ZeroStage};
use planner_core::precision::Precision;
use planner_core::presets::model_preset;
use planner_core::scenario::*;
#[test]
fn show() {
    let m = model_preset("llama-3.1-70b").unwrap();
    for (tp,pp,cp,dp) in [(8,4,4,4),(8,8,2,4)] {
        let layout = Layout { tp, pp, cp, dp, zero: ZeroStage::Zero1, recompute: Recompute::Selective, sequence_parallel: true, ..Layout::default() };
        let sc = Scenario { version: SCENARIO_VERSION, model: ModelChoice::Preset("x".into()), precision: Precision::default(),
            cluster: Cluster::of(gpu_preset("h100-sxm").unwrap(), 64), training: Training { seq_len: 32768, global_batch: 128 },
            layout: layout.clone(), activations: ActivationOptions::default(), overheads: Overheads::default(), serving: Serving::default() };
        let sm = StepModel::new(&m, &sc, CostOptions::default());
        let c = sm.evaluate(&layout);
        println!("{tp} {pp} {cp} {dp}: {:?}\n mfu {:.3} hfu {:.3} tok/s/gpu {:.0} eff {:.3}", c.seconds, c.mfu, c.hfu, c.tokens_per_s_per_gpu, c.gemm_efficiency);
        for i in &c.comms { println!("   {:?} {:?} {:?} msg {:.3e} calls {} {:?} s {:.4}", i.group, i.purpose, i.op, i.message_bytes, i.calls_per_step, i.domain, i.seconds_per_step); }
    }
}
