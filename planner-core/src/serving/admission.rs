//! Admission into the running batch: how many of a load's requests an engine runs at once
//! (its sequence cap, and what its KV pool holds under its admission policy), and how long
//! the others wait for a slot. A load whose KV exceeds the pool is served, as engines serve
//! it: the extra requests wait, or the engine preempts, and the running batch is what fits.

use crate::base::explain::{Term, Unit};
use crate::input::engine_scheduler::{self, KvAdmission};
use crate::input::scenario::Scenario;
use crate::input::serving_engine::ServingEngine;
use crate::memory::serving::ServingError;

use super::latency::term;

/// What holds the running batch below the load's clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// Every client's request runs.
    Clients,
    /// The engine's cap on running sequences.
    EngineCap,
    /// The KV pool under the engine's admission policy.
    KvPool,
}

/// The running batch of a load and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Admission {
    /// Requests the load keeps in flight (closed-loop clients).
    pub clients: u32,
    /// Requests decoding at once.
    pub running: u32,
    /// The engine's cap on running sequences, and where it comes from.
    pub cap: (u32, String),
    /// KV tokens one sequence holds on average under the policy.
    pub kv_tokens_per_seq: f64,
    /// Sequences the pool holds at that size.
    pub kv_seqs: f64,
    /// The policy.
    pub policy: KvAdmission,
    /// What binds.
    pub limit: Limit,
}

/// The cap on running sequences a scenario's engine applies, with its source.
pub fn engine_cap(scenario: &Scenario, pool_tokens: f64) -> (u32, String) {
    let serving = &scenario.serving;
    if let Some(n) = serving.max_running_seqs {
        return (n, "serving.max_running_seqs as given".to_string());
    }
    match serving.engine {
        ServingEngine::Vllm => match &serving.engine_profile {
            Some(p) => (
                p.max_num_seqs,
                "vLLM max_num_seqs of the engine profile".to_string(),
            ),
            None => {
                let gpu = &scenario.cluster.gpu;
                let n = engine_scheduler::vllm_default_max_num_seqs(gpu.memory_bytes, &gpu.name);
                (n, format!("vLLM's default max_num_seqs on {} (vllm/engine/arg_utils.py get_batch_defaults)", gpu.name))
            }
        },
        ServingEngine::Sglang => {
            let n = engine_scheduler::sglang_default_max_running(pool_tokens, serving.context_len);
            (n, "SGLang's default max_running_requests: min(pool / 2, request pool) (tp_worker.py, model_runner.py)".to_string())
        }
    }
}

/// The running batch of `clients` requests of `prompt` + `output` tokens on a pool of
/// `pool_tokens`; refused (naming the field) when the pool holds no sequence at all.
pub fn admit(
    scenario: &Scenario,
    clients: u32,
    prompt: u32,
    output: u32,
    pool_tokens: f64,
) -> Result<Admission, ServingError> {
    let policy = scenario
        .serving
        .kv_admission
        .unwrap_or_else(|| KvAdmission::default_for(scenario.serving.engine));
    let (p, o) = (f64::from(prompt), f64::from(output));
    let kv_tokens_per_seq = match policy {
        // GUARANTEED_NO_EVICT reserves the prompt and the whole output before admitting.
        KvAdmission::WholeRequest => p + o,
        // Admitting on the prompt keeps the pool full of sequences at every stage of their
        // output: staggered requests hold P + j tokens at their j-th of O steps, P + (O + 1)/2
        // on average (continuous batching, Yu et al. 2022; paged KV, Kwon et al. 2023).
        KvAdmission::PromptThenPreempt => p + (o + 1.0) / 2.0,
    };
    let kv_seqs = (pool_tokens.max(0.0) / kv_tokens_per_seq.max(1.0)).floor();
    if kv_seqs < 1.0 {
        return Err(ServingError {
            field: "serving.context_len",
            reason: format!(
                "the KV pool holds {pool_tokens:.0} tokens, less than one request's {kv_tokens_per_seq:.0} ({}): nothing can run",
                policy.id()
            ),
        });
    }
    let cap = engine_cap(scenario, pool_tokens);
    let kv_cap = kv_seqs.min(f64::from(u32::MAX)) as u32;
    let running = clients.min(cap.0.max(1)).min(kv_cap);
    let limit = if running == clients {
        Limit::Clients
    } else if running == kv_cap && kv_cap < cap.0 {
        Limit::KvPool
    } else {
        Limit::EngineCap
    };
    Ok(Admission {
        clients,
        running,
        cap,
        kv_tokens_per_seq,
        kv_seqs,
        policy,
        limit,
    })
}

impl Admission {
    /// The running batch, explained.
    pub fn running_term(&self) -> Term {
        let what = match self.limit {
            Limit::Clients => "every request of the load runs".to_string(),
            Limit::EngineCap => format!(
                "the engine's cap holds the batch ({}); the other requests wait for a slot",
                self.cap.1
            ),
            Limit::KvPool => format!(
                "the KV pool holds the batch: the engine {}",
                self.policy.action()
            ),
        };
        term(
            "serve.running_batch",
            "Running batch (requests)",
            Unit::Count,
            f64::from(self.running),
            "min(c, engine cap, ⌊KV pool / KV tokens per request⌋)",
            format!(
                "min({}, {}, {:.0}) = {} ({:.0} tokens per request: {})",
                self.clients,
                self.cap.0,
                self.kv_seqs,
                self.running,
                self.kv_tokens_per_seq,
                match self.policy {
                    KvAdmission::WholeRequest => "prompt + output reserved",
                    KvAdmission::PromptThenPreempt => "prompt + (output + 1)/2 held on average",
                }
            ),
            &format!(
                "{what}; a preempted request's recomputed tokens are not priced (vLLM V1 Scheduler.schedule, TensorRT-LLM CapacitySchedulerPolicy)"
            ),
        )
    }

    /// Mean wait for a slot, s, when requests complete at `rate_per_s`.
    pub fn wait_s(&self, rate_per_s: f64) -> f64 {
        let waiting = f64::from(self.clients.saturating_sub(self.running));
        // Little's law (Little 1961) on the line of waiting requests: L = λ·W, so W = (c − b)/λ.
        if waiting > 0.0 && rate_per_s > 0.0 {
            waiting / rate_per_s
        } else {
            0.0
        }
    }

    /// The wait for a slot, explained.
    pub fn wait_term(&self, rate_per_s: f64) -> Term {
        let w = self.wait_s(rate_per_s);
        term(
            "serve.admission_wait",
            "Wait for a slot in the batch (s)",
            Unit::Seconds,
            w,
            "(c − b) / λ",
            if rate_per_s > 0.0 && self.clients > self.running {
                format!(
                    "({} − {}) / {rate_per_s:.4} = {w:.4} s",
                    self.clients, self.running
                )
            } else if rate_per_s > 0.0 {
                format!(
                    "all {} requests run at once: no wait = 0 s",
                    self.clients
                )
            } else {
                "open loop (no completion rate closes it): the engine adds no slot wait = 0 s"
                    .to_string()
            },
            "Little's law on the requests waiting for admission (closed loop: every client keeps one request in the engine; completions at λ free slots)",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(engine: ServingEngine) -> Scenario {
        let mut s = crate::resolve::presets::default_scenario();
        s.serving.engine = engine;
        s
    }

    #[test]
    fn the_wait_says_why_it_is_zero() {
        let a = Admission {
            clients: 10,
            running: 10,
            cap: (256, "engine default".to_string()),
            kv_tokens_per_seq: 1280.0,
            kv_seqs: 100.0,
            policy: KvAdmission::PromptThenPreempt,
            limit: Limit::Clients,
        };
        assert!(a.wait_term(2.0).worked.contains("no wait"));
        let open = Admission {
            clients: 12,
            limit: Limit::KvPool,
            ..a
        };
        assert!(open.wait_term(0.0).worked.contains("open loop"));
        // (12 − 10) / 4 = 0.5 s.
        assert!((open.wait_s(4.0) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn the_pool_holds_fewer_whole_requests_than_growing_ones() {
        let mut s = scenario(ServingEngine::Vllm);
        s.serving.max_running_seqs = Some(1000);
        // 100,000 tokens; 1,000 + 1,000 tokens: reserve ⌊1e5/2000⌋ = 50;
        // preempt ⌊1e5/(1000 + 500.5)⌋ = 66.
        s.serving.kv_admission = Some(KvAdmission::WholeRequest);
        let a = admit(&s, 200, 1000, 1000, 1e5).expect("fits one");
        assert_eq!((a.running, a.limit), (50, Limit::KvPool));
        s.serving.kv_admission = Some(KvAdmission::PromptThenPreempt);
        let a = admit(&s, 200, 1000, 1000, 1e5).expect("fits one");
        assert_eq!((a.running, a.limit), (66, Limit::KvPool));
        // 134 wait; completions at 10/s: 13.4 s.
        assert!((a.wait_s(10.0) - 13.4).abs() < 1e-12);
    }

    #[test]
    fn the_engine_cap_binds_before_a_large_pool() {
        let mut s = scenario(ServingEngine::Vllm);
        s.serving.max_running_seqs = Some(256);
        let a = admit(&s, 1000, 128, 128, 1e9).expect("fits");
        assert_eq!((a.running, a.limit), (256, Limit::EngineCap));
        let a = admit(&s, 16, 128, 128, 1e9).expect("fits");
        assert_eq!(
            (a.running, a.limit, a.wait_s(3.0)),
            (16, Limit::Clients, 0.0)
        );
    }

    #[test]
    fn a_pool_without_room_for_one_request_names_the_field() {
        let s = scenario(ServingEngine::Sglang);
        let e = admit(&s, 4, 4096, 4096, 5000.0).expect_err("no room");
        assert_eq!(e.field, "serving.context_len");
    }
}
