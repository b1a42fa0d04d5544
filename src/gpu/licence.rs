//! The vGPU licence state of a GPU (`DCGM_FI_DEV_VGPU_LICENSE_STATUS`) through
//! `nvmlDeviceGetGridLicensableFeatures_v4`, which nvml-wrapper does not wrap, read as DCGM
//! reads it: 0 where NVML reports no licensing (bare metal), else whether the vGPU feature is
//! licensed.
//!
//! Owns the raw call and the decoding. Returns a number or an NVML error; it must not decide
//! how an error is logged or counted (the reader's book does) and must not encode.

use std::mem;

use nvml_wrapper::error::{NvmlError, nvml_try};
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::nvmlGridLicensableFeatures_t;

/// `NVML_GRID_LICENSE_FEATURE_CODE_VGPU`.
const FEATURE_CODE_VGPU: u32 = 1;

/// 1 when the GPU's vGPU feature is licensed, 0 when it is not or when the GPU supports no
/// licensing (a GPU outside a vGPU guest); `None` when NVML lists licensable features but no
/// vGPU feature among them (DCGM then stores no value either).
pub(crate) fn vgpu_licensed(nvml: &Nvml, dev: &Device<'_>) -> Result<Option<f64>, NvmlError> {
    let f = super::sym(nvml.lib().nvmlDeviceGetGridLicensableFeatures_v4.as_ref())?;
    // SAFETY: plain C data; all zeroes is a valid value of every field.
    let mut out: nvmlGridLicensableFeatures_t = unsafe { mem::zeroed() };
    // SAFETY: the handle comes from nvml-wrapper and is valid while `nvml` lives; `out` is a
    // valid out-pointer for the duration of the call.
    nvml_try(unsafe { f(dev.handle(), &mut out) })?;
    Ok(decode(&out))
}

fn decode(out: &nvmlGridLicensableFeatures_t) -> Option<f64> {
    if out.isGridLicenseSupported == 0 {
        return Some(0.0);
    }
    let n = (out.licensableFeaturesCount as usize).min(out.gridLicensableFeatures.len());
    out.gridLicensableFeatures[..n]
        .iter()
        .find(|f| f.featureCode == FEATURE_CODE_VGPU)
        .map(|f| if f.featureState > 0 { 1.0 } else { 0.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features(supported: i32, codes: &[(u32, u32)]) -> nvmlGridLicensableFeatures_t {
        // SAFETY: plain C data; all zeroes is a valid value.
        let mut out: nvmlGridLicensableFeatures_t = unsafe { mem::zeroed() };
        out.isGridLicenseSupported = supported;
        out.licensableFeaturesCount = codes.len() as u32;
        for (f, (code, state)) in out.gridLicensableFeatures.iter_mut().zip(codes) {
            f.featureCode = *code;
            f.featureState = *state;
        }
        out
    }

    #[test]
    fn decodes_as_dcgm_does() {
        // Bare metal: no licensing, 0.
        assert_eq!(decode(&features(0, &[])), Some(0.0));
        // A guest: the vGPU feature's state, wherever it is in the list.
        assert_eq!(decode(&features(1, &[(1, 1)])), Some(1.0));
        assert_eq!(decode(&features(1, &[(1, 0)])), Some(0.0));
        assert_eq!(decode(&features(1, &[(4, 1), (1, 2)])), Some(1.0));
        // Licensing but no vGPU feature (a workstation licence only): no value.
        assert_eq!(decode(&features(1, &[(2, 1)])), None);
        // A count beyond the array is clamped, not read past it.
        let mut many = features(1, &[(2, 1), (3, 1), (4, 1)]);
        many.licensableFeaturesCount = 9;
        assert_eq!(decode(&many), None);
    }
}
