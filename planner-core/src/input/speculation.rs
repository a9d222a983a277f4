//! Speculative decoding as a deployment choice: a draft proposes `k` tokens, the target
//! verifies them in one forward of `k + 1` tokens per sequence, and on average
//! `(1 − α^{k+1}) / (1 − α)` of them are kept. The pricing is
//! [`crate::serving::speculation`].

use serde::{Deserialize, Serialize};

/// Who drafts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpecMethod {
    /// A separate small model of the same tokenizer (Leviathan et al. 2023), `draft_params`
    /// parameters, run `k` times per step.
    DraftModel,
    /// An EAGLE head (Li et al. 2024): one decoder layer of the target's shape fed the
    /// target's features through a `2h → h` projection, decoding through the target's LM head.
    Eagle,
    /// EAGLE-3 (Li et al. 2025): the same head fed three of the target's layers' features
    /// through a `3h → h` projection.
    Eagle3,
    /// The model's own multi-token-prediction modules (DeepSeek-V3 §2.2): one decoder layer
    /// of the model's shape and a `2h → h` projection per drafted token, sharing the LM head.
    Mtp,
}

impl SpecMethod {
    /// Every method.
    pub const ALL: [SpecMethod; 4] = [
        SpecMethod::DraftModel,
        SpecMethod::Eagle,
        SpecMethod::Eagle3,
        SpecMethod::Mtp,
    ];

    /// Stable identifier (links, CLI, vLLM's `method`).
    pub fn id(self) -> &'static str {
        match self {
            SpecMethod::DraftModel => "draft_model",
            SpecMethod::Eagle => "eagle",
            SpecMethod::Eagle3 => "eagle3",
            SpecMethod::Mtp => "mtp",
        }
    }

    /// Parses [`SpecMethod::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.id() == id)
    }
}

/// Largest draft length accepted (engines' examples use 1–8; 16 bounds the search).
pub const MAX_DRAFT_TOKENS: u32 = 16;

/// The acceptance rate used when none is stated: DeepSeek-V3 Technical Report (arXiv
/// 2412.19437) §5.4.3, "the acceptance rate of the second token prediction ranges between 85%
/// and 90%" across generation topics; the low end. A measured rate of your own draft on your
/// own traffic replaces it.
pub const DEFAULT_ACCEPTANCE: f64 = 0.85;

/// A speculative-decoding setting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Speculation {
    /// Who drafts.
    pub method: SpecMethod,
    /// Tokens drafted per step, `k` (vLLM `num_speculative_tokens`).
    pub draft_tokens: u32,
    /// Probability that the target accepts a drafted token given the ones before it, α.
    pub acceptance: f64,
    /// Parameters of the draft model (`draft_model` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_params: Option<f64>,
}

impl Speculation {
    /// Tokens one verify step yields per sequence on average: the accepted prefix of the `k`
    /// drafts plus the target's own token (Leviathan et al. 2023, eq. 1):
    /// `(1 − α^{k+1}) / (1 − α)`.
    pub fn tokens_per_step(&self) -> f64 {
        let a = self.acceptance.clamp(0.0, 1.0);
        let k1 = f64::from(self.draft_tokens) + 1.0;
        if (1.0 - a).abs() < 1e-12 {
            k1
        } else {
            (1.0 - a.powf(k1)) / (1.0 - a)
        }
    }

    /// Range checks; the message names the part of the setting at fault.
    pub fn check(&self) -> Result<(), String> {
        if self.draft_tokens == 0 || self.draft_tokens > MAX_DRAFT_TOKENS {
            return Err(format!(
                "draft_tokens must be in 1..={MAX_DRAFT_TOKENS}, got {}",
                self.draft_tokens
            ));
        }
        if !(self.acceptance.is_finite() && self.acceptance > 0.0 && self.acceptance < 1.0) {
            return Err(format!(
                "acceptance must be in (0, 1), got {}",
                self.acceptance
            ));
        }
        match (self.method, self.draft_params) {
            (SpecMethod::DraftModel, None) => {
                Err("draft_params: a draft model needs its parameter count".to_string())
            }
            (_, Some(p)) if !(p.is_finite() && (1e6..=1e12).contains(&p)) => Err(format!(
                "draft_params must be in [1e6, 1e12] parameters, got {p}"
            )),
            _ => Ok(()),
        }
    }

    /// `serve_spec=` link value: `method,k,α[,draft_params]`.
    pub fn to_link(&self) -> String {
        let mut v = format!(
            "{},{},{}",
            self.method.id(),
            self.draft_tokens,
            self.acceptance
        );
        if let Some(p) = self.draft_params {
            v.push_str(&format!(",{p}"));
        }
        v
    }

    /// Parses [`Speculation::to_link`]; ranges are checked by [`Speculation::check`].
    pub fn from_link(v: &str) -> Result<Self, String> {
        let parts: Vec<&str> = v.split(',').collect();
        if !(3..=4).contains(&parts.len()) {
            return Err(format!("'{v}' is not method,k,acceptance[,draft_params]"));
        }
        let method = SpecMethod::from_id(parts[0])
            .ok_or_else(|| format!("'{}' is not draft_model, eagle, eagle3 or mtp", parts[0]))?;
        let draft_tokens = parts[1]
            .parse()
            .map_err(|_| format!("draft tokens '{}' is not a whole number", parts[1]))?;
        let acceptance = parts[2]
            .parse()
            .map_err(|_| format!("acceptance '{}' is not a number", parts[2]))?;
        let draft_params = match parts.get(3) {
            Some(p) => Some(
                p.parse()
                    .map_err(|_| format!("draft parameters '{p}' is not a number"))?,
            ),
            None => None,
        };
        Ok(Speculation {
            method,
            draft_tokens,
            acceptance,
            draft_params,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_tokens_follow_the_geometric_series() {
        // α = 0.8, k = 3: 1 + 0.8 + 0.64 + 0.512 = 2.952.
        let s = Speculation {
            method: SpecMethod::Eagle,
            draft_tokens: 3,
            acceptance: 0.8,
            draft_params: None,
        };
        assert!((s.tokens_per_step() - 2.952).abs() < 1e-12);
        // MTP's one draft at the default 0.85: 1.85 tokens per step.
        let m = Speculation {
            method: SpecMethod::Mtp,
            draft_tokens: 1,
            acceptance: DEFAULT_ACCEPTANCE,
            draft_params: None,
        };
        assert!((m.tokens_per_step() - 1.85).abs() < 1e-12);
    }

    #[test]
    fn a_draft_model_without_its_size_is_refused_by_key() {
        let s = Speculation {
            method: SpecMethod::DraftModel,
            draft_tokens: 4,
            acceptance: 0.7,
            draft_params: None,
        };
        assert!(s.check().expect_err("refused").starts_with("draft_params"));
        let e = Speculation {
            draft_params: Some(1.24e9),
            ..s
        };
        assert_eq!(Speculation::from_link(&e.to_link()), Ok(e));
    }
}
