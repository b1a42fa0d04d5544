//! The static field tables, one file per kind of field, and [`TABLES`], the order in which
//! the catalogue lists them.
//!
//! Owns which table a field belongs to and the lookup of the older and DCGM 4.6 names the
//! tables keep beside their rows. Every table is ordered by DCGM id (a test in `catalogue`
//! checks it). Data only: it must not do I/O or call NVML, and it holds no alias of the
//! `legacy` list.

mod board;
mod exporter_4_8;
mod link_entity;
mod nvlink_by_link;
mod nvlink_gpu;
mod nvswitch;
mod since_dcgm_4_6;

use super::field::FieldDef;

pub use board::BOARD;
pub use exporter_4_8::EXPORTER_4_8;
pub use link_entity::{LINK_ENTITY, NVLINK_PORT_REGISTERS};
pub use nvlink_by_link::{NVLINK_BY_LINK, NVLINK_GPM_BY_LINK};
pub use nvlink_gpu::{FABRIC, NVLINK_ERROR_RECORD, NVLINK5};
pub use nvswitch::NVSWITCH;
pub use since_dcgm_4_6::SINCE_DCGM_4_6;

/// Every table, in the order [`all`](super::all) lists the fields: dcgm-exporter 4.8's
/// fields, the board fields, the fields DCGM added in 4.6 and later, the NVLink fields named
/// per link, the GPU's NVLink error record and fabric registration, NVLink 5's GPU totals, the
/// per-link GPM traffic, the link-entity fields, the port-register fields, then the NVSwitch
/// fields (known so that a file naming them loads, never read).
pub static TABLES: &[&[FieldDef]] = &[
    EXPORTER_4_8,
    BOARD,
    SINCE_DCGM_4_6,
    NVLINK_BY_LINK,
    NVLINK_ERROR_RECORD,
    FABRIC,
    NVLINK5,
    NVLINK_GPM_BY_LINK,
    LINK_ENTITY,
    NVLINK_PORT_REGISTERS,
    NVSWITCH,
];

/// The field an older or DCGM 4.6 name of an NVLink, fabric, port-register or NVSwitch field
/// stands for (same id), ASCII case-insensitive. The `legacy` aliases are looked up apart.
pub(super) fn canonical_name(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    // Each list pairs another name with the canonical one.
    let renamed = |list: &[(&str, &'static str)]| {
        list.iter()
            .find(|(other, _)| *other == upper)
            .map(|(_, canonical)| *canonical)
    };
    renamed(nvlink_gpu::FABRIC_RENAMED)
        .or_else(|| renamed(nvlink_gpu::NVLINK5_RENAMED))
        .or_else(|| nvlink_by_link::canonical_name(name))
        .or_else(|| renamed(link_entity::RENAMED))
        .or_else(|| renamed(nvswitch::RENAMED))
}
