//! The mesh explorer's data: the search result the worker sends back, re-exported so the
//! page names it without reaching into the search. The search runs in the worker
//! (`edges::mesh_page`); the page only draws its result.

/// The ranked meshes, the rejections and their reasons: what the explorer's table and notes draw.
pub use crate::search::mesh::{Feasible, MeshDims, RejectReason, SearchResult};
