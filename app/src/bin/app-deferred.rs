//! The deferred module: the sections at the page's end (mesh explorer, step-time breakdown,
//! accuracy, topology, learn, model import, measured numbers, fine-tuning, exports), loaded
//! by the page once its first chart is on screen, so the page's first download carries none
//! of their code (`app::deferred`).

fn main() {
    app::deferred::start();
}
