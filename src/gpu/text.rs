//! Pure conversions of NVML facts into the strings dcgm-exporter's labels carry.
//!
//! No NVML calls and no I/O.

use nvml_wrapper::enum_wrappers::device::Brand;

/// The profile part of a MIG device name: NVML names MIG devices
/// `"<parent name> MIG <profile>"`, e.g. `NVIDIA H100 80GB HBM3 MIG 3g.40gb`.
pub fn mig_profile_from_name(name: &str) -> Option<&str> {
    let (_, profile) = name.rsplit_once(" MIG ")?;
    let profile = profile.trim();
    (!profile.is_empty()).then_some(profile)
}

/// Brand as a human-readable string.
pub fn brand_name(brand: &Brand) -> String {
    match brand {
        Brand::Unknown => "Unknown".into(),
        Brand::Quadro => "Quadro".into(),
        Brand::Tesla => "Tesla".into(),
        Brand::NVS => "NVS".into(),
        Brand::GRID => "GRID".into(),
        Brand::GeForce => "GeForce".into(),
        Brand::Titan => "Titan".into(),
        other => format!("{other:?}"),
    }
}

/// Description of well-known Xid codes (from NVIDIA's public Xid catalogue), for the
/// `err_msg` label of `DCGM_FI_DEV_XID_ERRORS`.
pub fn xid_message(code: u64) -> &'static str {
    match code {
        0 => "No Error",
        8 => "GPU stopped processing",
        13 => "Graphics Engine Exception",
        31 => "GPU memory page fault",
        32 => "Invalid or corrupted push buffer stream",
        43 => "GPU stopped processing",
        45 => "Preemptive cleanup, due to previous errors",
        48 => "Double Bit ECC Error",
        61 => "Internal micro-controller breakpoint/warning",
        62 => "Internal micro-controller halt",
        63 => "ECC page retirement or row remapping recording event",
        64 => "ECC page retirement or row remapper recording failure",
        68 => "NVDEC0 Exception",
        69 => "Graphics Engine class error",
        74 => "NVLINK Error",
        79 => "GPU has fallen off the bus",
        92 => "High single-bit ECC error rate",
        94 => "Contained ECC error",
        95 => "Uncontained ECC error",
        119 => "GSP RPC Timeout",
        120 => "GSP Error",
        121 => "C2C Link Error",
        140 => "Unrecovered ECC Error",
        _ => "Unknown Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_parsed_from_mig_name() {
        assert_eq!(
            mig_profile_from_name("NVIDIA H100 80GB HBM3 MIG 3g.40gb"),
            Some("3g.40gb")
        );
        assert_eq!(
            mig_profile_from_name("NVIDIA A100-SXM4-40GB MIG 1g.5gb"),
            Some("1g.5gb")
        );
        assert_eq!(mig_profile_from_name("NVIDIA L4"), None);
        assert_eq!(mig_profile_from_name("X MIG "), None);
    }

    #[test]
    fn xid_messages() {
        assert_eq!(xid_message(79), "GPU has fallen off the bus");
        assert_eq!(xid_message(0), "No Error");
        assert_eq!(xid_message(9999), "Unknown Error");
    }

    #[test]
    fn brand_names() {
        assert_eq!(brand_name(&Brand::Tesla), "Tesla");
    }
}
