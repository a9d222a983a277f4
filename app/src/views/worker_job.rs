//! One request to the page's worker (`app-worker/`) for a user's action (an import): the
//! worker is created for it, sent the request once it says it is ready, and terminated
//! after its one reply. The page never blocks on it: [`ask`] returns at once and the
//! reply (or why there is none) arrives in `done`.

use std::cell::RefCell;
use std::rc::Rc;

use planner_core::edges::validation::PageReply;
use wasm_bindgen::prelude::*;
use web_sys::{MessageEvent, Worker};

use crate::views::worker_handle::spawn_worker;

/// Posts `request` to a fresh worker; `done` gets its text reply, or the error.
pub fn ask(request: String, done: impl FnOnce(Result<String, String>) + 'static) {
    // Shared by the two handlers: whichever fires first answers.
    let done = Rc::new(RefCell::new(Some(done)));
    let finish = move |worker: Option<&Worker>, reply: Result<String, String>| {
        if let Some(w) = worker {
            w.terminate();
        }
        if let Some(f) = done.borrow_mut().take() {
            f(reply);
        }
    };
    // The error handler has no worker to hand: it terminates the one kept here.
    let started: Rc<RefCell<Option<Worker>>> = Rc::default();
    let finish_err = {
        let (finish, started) = (finish.clone(), started.clone());
        move |message: String| {
            let worker = started.borrow().clone();
            finish(
                worker.as_ref(),
                Err(format!("the import worker failed: {message}")),
            );
        }
    };
    let mut request = Some(request);
    let finish_msg = finish.clone();
    let on_message = move |worker: &Worker, ev: MessageEvent| {
        let text = ev.data().as_string().unwrap_or_default();
        // The worker's first message says it has loaded.
        if let Some(req) = request.take() {
            if matches!(PageReply::from_text(&text), Ok(PageReply::Ready)) {
                if let Err(e) = worker.post_message(&JsValue::from_str(&req)) {
                    finish_msg(
                        Some(worker),
                        Err(format!("posting to the import worker failed: {e:?}")),
                    );
                }
                return;
            }
            request = Some(req);
        }
        finish_msg(Some(worker), Ok(text));
    };
    match spawn_worker(on_message, finish_err) {
        Ok(worker) => *started.borrow_mut() = Some(worker),
        Err(e) => finish(None, Err(format!("the import worker did not start: {e}"))),
    }
}
