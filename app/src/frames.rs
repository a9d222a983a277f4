//! When to hand a Web Worker its work: after the frame that shows the input is drawn.
//!
//! On a 2-core machine a worker that starts computing while the page's frame is being
//! rendered takes a core from that frame's main-thread work, raster and display compositor;
//! traced, the frame's callbacks then ran 3–5 ms late (issues 12 and 16).

use leptos::prelude::{request_animation_frame, set_timeout};

/// Runs `f` in a task queued from the animation frame after next: by then the current
/// frame has been committed, rastered and (mostly) composited.
pub fn after_this_frame_is_drawn(f: impl FnOnce() + 'static) {
    request_animation_frame(move || {
        request_animation_frame(move || set_timeout(f, std::time::Duration::ZERO))
    });
}
