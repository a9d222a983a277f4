//! The page's only network requests: a Hub model's files, on the person's click
//! (`views/hub_import.rs`). web-sys `fetch` (features Request, RequestInit, RequestMode,
//! Response, Headers), not gloo-net, chosen by bundle size:
//!
//! BUNDLE_MEASUREMENT, deferred module (`cargo build -p app --bin app-deferred --target
//! wasm32-unknown-unknown --profile wasm-release`, then `wasm-opt -Oz`, `gzip -9`; before
//! wasm-bindgen, JS glue not counted): web-sys fetch 2,208,100 B, 723,831 B gzipped; gloo-net
//! 0.6 (`http` only, `--features fetch-gloo`) 2,212,102 B, 726,813 B gzipped: gloo-net costs
//! 3.0 KB more gzipped; without the Hub block 711,667 B gzipped (the block adds 12.2 KB).
//! docs/measurement-log.md ("Hub fetch crate") has the table.
//!
//! Every request starts when it is made (`window.fetch`), so the shards' ranges are asked
//! for together and read in order.

#[cfg(not(feature = "fetch-gloo"))]
use js_sys::Uint8Array;
#[cfg(not(feature = "fetch-gloo"))]
use wasm_bindgen::JsCast;
#[cfg(not(feature = "fetch-gloo"))]
use wasm_bindgen_futures::JsFuture;
use web_sys::RequestMode;
#[cfg(not(feature = "fetch-gloo"))]
use web_sys::{Request, RequestInit, Response};

/// Why a request returned no bytes.
#[derive(Clone, Debug, PartialEq)]
pub enum FetchError {
    /// The server answered with this status.
    Status(u16),
    /// No answer: offline, refused, blocked by CORS, or the reply was not what was asked.
    Network(String),
}

/// A request on its way.
pub struct Pending {
    #[cfg(not(feature = "fetch-gloo"))]
    reply: JsFuture,
    #[cfg(feature = "fetch-gloo")]
    request: gloo_net::http::Request,
    /// Bytes asked for (`Some` for a range).
    range: Option<(u64, u64)>,
    /// Largest body read.
    max_bytes: u64,
}

#[cfg(not(feature = "fetch-gloo"))]
fn network(e: wasm_bindgen::JsValue) -> FetchError {
    FetchError::Network(
        e.as_string()
            .or_else(|| {
                e.dyn_ref::<js_sys::Error>()
                    .map(|e| String::from(e.message()))
            })
            .unwrap_or_else(|| "the request failed".to_string()),
    )
}

/// gloo-net's request (feature `fetch-gloo`, for the bundle measurement only: it starts when
/// awaited, so the shards' ranges go one at a time).
#[cfg(feature = "fetch-gloo")]
pub fn start(url: &str, range: Option<(u64, u64)>, max_bytes: u64) -> Result<Pending, FetchError> {
    let mut builder = gloo_net::http::Request::get(url).mode(RequestMode::Cors);
    if let Some((a, b)) = range {
        builder = builder.header("Range", &format!("bytes={a}-{b}"));
    }
    let request = builder
        .build()
        .map_err(|e| FetchError::Network(e.to_string()))?;
    Ok(Pending {
        request,
        range,
        max_bytes,
    })
}

#[cfg(feature = "fetch-gloo")]
impl Pending {
    /// The body's bytes, as the web-sys version checks them.
    pub async fn bytes(self) -> Result<Vec<u8>, FetchError> {
        let net = |e: gloo_net::Error| FetchError::Network(e.to_string());
        let response = self.request.send().await.map_err(net)?;
        let status = response.status();
        if status != if self.range.is_some() { 206 } else { 200 } {
            return Err(FetchError::Status(status));
        }
        let bytes = response.binary().await.map_err(net)?;
        let expected = self.range.map_or(self.max_bytes, |(a, b)| b - a + 1);
        if bytes.len() as u64 > expected {
            return Err(FetchError::Network(format!(
                "{} bytes where at most {expected} were asked for",
                bytes.len()
            )));
        }
        Ok(bytes)
    }
}

/// Starts a GET of `url` (a byte range of it when `range` is given; inclusive ends).
#[cfg(not(feature = "fetch-gloo"))]
pub fn start(url: &str, range: Option<(u64, u64)>, max_bytes: u64) -> Result<Pending, FetchError> {
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_mode(RequestMode::Cors);
    let request = Request::new_with_str_and_init(url, &init).map_err(network)?;
    if let Some((a, b)) = range {
        // A single range is a CORS-safelisted header: no preflight (Fetch standard, §2.2.2).
        request
            .headers()
            .set("Range", &format!("bytes={a}-{b}"))
            .map_err(network)?;
    }
    let window = web_sys::window().ok_or(FetchError::Network("no window".into()))?;
    Ok(Pending {
        reply: JsFuture::from(window.fetch_with_request(&request)),
        range,
        max_bytes,
    })
}

#[cfg(not(feature = "fetch-gloo"))]
impl Pending {
    /// The body's bytes. A range answered with the whole file (200) is refused unread: the
    /// page never downloads weights.
    pub async fn bytes(self) -> Result<Vec<u8>, FetchError> {
        let response: Response = self.reply.await.map_err(network)?.unchecked_into();
        let status = response.status();
        let ok = match self.range {
            Some(_) => status == 206,
            None => status == 200,
        };
        if !ok {
            return Err(if status == 200 {
                FetchError::Network(
                    "the server ignored the byte range and would send the whole file".into(),
                )
            } else {
                FetchError::Status(status)
            });
        }
        let buffer = JsFuture::from(response.array_buffer().map_err(network)?)
            .await
            .map_err(network)?;
        let bytes = Uint8Array::new(&buffer);
        let expected = self.range.map_or(self.max_bytes, |(a, b)| b - a + 1);
        if u64::from(bytes.length()) > expected {
            return Err(FetchError::Network(format!(
                "{} bytes where at most {expected} were asked for",
                bytes.length()
            )));
        }
        Ok(bytes.to_vec())
    }
}
