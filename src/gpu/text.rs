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
    fn brand_names() {
        assert_eq!(brand_name(&Brand::Tesla), "Tesla");
    }
}
