//! Serving latency: prefill, decode, batching and queueing, disaggregated pools; joins serving memory and time.
//!
//! Invariant: Imports the layers below; never search, figures or edges.

pub mod admission;
pub mod closed_loop;
pub mod custom_all_reduce;
pub mod decode_attention;
pub mod disagg;
pub mod kernel_gaps;
pub mod latency;
pub mod layer_traffic;
pub mod speculation;
pub mod weight_stream;
pub mod window_decode;
pub mod window_prefill;
