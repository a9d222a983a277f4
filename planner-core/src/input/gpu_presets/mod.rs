//! Every GPU preset, one architecture family per file: each record states a GPU's datasheet
//! figures (with the public readout of its device memory), its traits
//! ([`crate::input::gpu_traits::GpuTraits`]) and the device names its driver prints, each cited
//! in one line above it. Nothing else in the workspace lists GPU ids: the page's select, the
//! share-link codec, the CLI and the device-name import read this table through
//! [`crate::input::hardware::gpu_presets`], so adding a GPU is one record in its family's file
//! (docs/adding-a-gpu.md). PCIe cards sit in one server shape ([`pcie_server`]).

mod ada;
mod amd;
mod amd_cdna4;
mod ampere;
mod blackwell;
mod blackwell_ultra;
mod hopper;
pub mod pcie_server;

use crate::input::hardware::GpuPreset;

/// Every preset, in the order the page lists them: by architecture, oldest first, AMD last.
pub(crate) fn all() -> Vec<GpuPreset> {
    [
        ampere::presets(),
        ada::presets(),
        hopper::presets(),
        blackwell::presets(),
        blackwell_ultra::presets(),
        amd::presets(),
        amd_cdna4::presets(),
    ]
    .concat()
}
