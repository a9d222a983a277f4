//! One request to the page's worker (`app-worker/`) for a user's action (an import): the
//! worker is created for it, sent the request once it says it is ready, and terminated
//! after its one reply. The page never blocks on it: [`ask`] returns at once and the
//! reply (or why there is none) arrives in `done`.

use planner_core::edges::validation::PageReply;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{ErrorEvent, MessageEvent, Worker};

use crate::views::accuracy::WORKER_URL;

/// Posts `request` to a fresh worker; `done` gets its text reply, or the error.
pub fn ask(request: String, done: impl FnOnce(Result<String, String>) + 'static) {
    let worker = match Worker::new(WORKER_URL) {
        Ok(w) => w,
        Err(e) => {
            done(Err(format!("the import worker did not start: {e:?}")));
            return;
        }
    };
    // Shared by the two handlers: whichever fires first answers.
    let done = std::rc::Rc::new(std::cell::RefCell::new(Some(done)));
    let finish = {
        let done = done.clone();
        let worker = worker.clone();
        move |reply: Result<String, String>| {
            worker.terminate();
            if let Some(f) = done.borrow_mut().take() {
                f(reply);
            }
        }
    };
    let finish_err = finish.clone();
    let handle = worker.clone();
    let mut request = Some(request);
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        let text = ev.data().as_string().unwrap_or_default();
        // The worker's first message says it has loaded.
        if let Some(req) = request.take() {
            if matches!(PageReply::from_text(&text), Ok(PageReply::Ready)) {
                if let Err(e) = handle.post_message(&JsValue::from_str(&req)) {
                    finish(Err(format!("posting to the import worker failed: {e:?}")));
                }
                return;
            }
            request = Some(req);
        }
        finish(Ok(text));
    });
    let onerror = Closure::<dyn FnMut(ErrorEvent)>::new(move |ev: ErrorEvent| {
        finish_err(Err(format!("the import worker failed: {}", ev.message())));
    });
    worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
    // The handlers live as long as the worker they belong to, which the reply terminates;
    // one pair per import (a user's action), so forgetting them leaks a few bytes a file.
    onmessage.forget();
    onerror.forget();
}
