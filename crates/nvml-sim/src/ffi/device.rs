//! Device identity entry points: index, UUID, name, PCI info, minor number, brand, serial,
//! firmware versions, architecture, vGPU licensing. MIG devices answer with their own UUID and
//! name and with their parent GPU's facts otherwise.

use std::ffi::c_char;
use std::os::raw::c_uint;

use nvml_wrapper_sys::bindings::{
    nvmlBrandType_enum_NVML_BRAND_NVIDIA, nvmlBrandType_t, nvmlDevice_t, nvmlDeviceArchitecture_t,
    nvmlGridLicensableFeatures_t, nvmlInforomObject_t, nvmlPciInfo_t, nvmlReturn_t,
};

use super::{dev, out, put_str, run};
use crate::ret;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetIndex(
    device: nvmlDevice_t,
    index: *mut c_uint,
) -> nvmlReturn_t {
    run(|sim, t| {
        let o = unsafe { out(index) }?;
        let d = dev(sim, device, "nvmlDeviceGetIndex", t)?;
        *o = sim.nvml_index(d.gpu(), t);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUUID(
    device: nvmlDevice_t,
    uuid: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    run(|sim, t| {
        let d = dev(sim, device, "nvmlDeviceGetUUID", t)?;
        let s = sim.uuid(d)?;
        unsafe { put_str(uuid, length, &s) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetName(
    device: nvmlDevice_t,
    name: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    run(|sim, t| {
        let d = dev(sim, device, "nvmlDeviceGetName", t)?;
        let s = sim.name(d)?;
        unsafe { put_str(name, length, &s) }
    })
}

/// Copies `s` into a fixed C char array, NUL-terminated, truncating if needed.
fn fill(dst: &mut [c_char], s: &str) {
    dst.iter_mut().for_each(|c| *c = 0);
    let n = s.len().min(dst.len().saturating_sub(1));
    for (d, b) in dst.iter_mut().zip(s.bytes().take(n)) {
        *d = b as c_char;
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v3(
    device: nvmlDevice_t,
    pci: *mut nvmlPciInfo_t,
) -> nvmlReturn_t {
    run(|sim, t| {
        let o = unsafe { out(pci) }?;
        let d = dev(sim, device, "nvmlDeviceGetPciInfo_v3", t)?;
        let gpu = sim.physical(d)?;
        fill(&mut o.busIdLegacy, &gpu.pci.bus_id_legacy());
        fill(&mut o.busId, &gpu.pci.bus_id());
        o.domain = gpu.pci.domain;
        o.bus = gpu.pci.bus;
        o.device = gpu.pci.device;
        o.pciDeviceId = gpu.model.pci_device_id;
        o.pciSubSystemId = gpu.model.pci_subsystem_id;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMinorNumber(
    device: nvmlDevice_t,
    minor_number: *mut c_uint,
) -> nvmlReturn_t {
    run(|sim, t| {
        let o = unsafe { out(minor_number) }?;
        let d = dev(sim, device, "nvmlDeviceGetMinorNumber", t)?;
        *o = sim.physical(d)?.minor_at(t);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetBrand(
    device: nvmlDevice_t,
    type_: *mut nvmlBrandType_t,
) -> nvmlReturn_t {
    run(|sim, t| {
        let o = unsafe { out(type_) }?;
        dev(sim, device, "nvmlDeviceGetBrand", t)?;
        *o = nvmlBrandType_enum_NVML_BRAND_NVIDIA;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetSerial(
    device: nvmlDevice_t,
    serial: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    run(|sim, t| {
        let d = dev(sim, device, "nvmlDeviceGetSerial", t)?;
        let s = sim.physical(d)?.serial.clone();
        unsafe { put_str(serial, length, &s) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetVbiosVersion(
    device: nvmlDevice_t,
    version: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    run(|sim, t| {
        let d = dev(sim, device, "nvmlDeviceGetVbiosVersion", t)?;
        let s = sim.physical(d)?.model.vbios;
        unsafe { put_str(version, length, s) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetInforomVersion(
    device: nvmlDevice_t,
    object: nvmlInforomObject_t,
    version: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    run(|sim, t| {
        dev(sim, device, "nvmlDeviceGetInforomVersion", t)?;
        let s = match object {
            0 => "2.1",
            1 => "7.16",
            2 => return Err(ret::NOT_SUPPORTED),
            3 => "1.0",
            _ => return Err(ret::INVALID_ARGUMENT),
        };
        unsafe { put_str(version, length, s) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetInforomImageVersion(
    device: nvmlDevice_t,
    version: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    run(|sim, t| {
        let d = dev(sim, device, "nvmlDeviceGetInforomImageVersion", t)?;
        let s = sim.physical(d)?.model.inforom_image;
        unsafe { put_str(version, length, s) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetArchitecture(
    device: nvmlDevice_t,
    arch: *mut nvmlDeviceArchitecture_t,
) -> nvmlReturn_t {
    run(|sim, t| {
        let o = unsafe { out(arch) }?;
        let d = dev(sim, device, "nvmlDeviceGetArchitecture", t)?;
        *o = sim.physical(d)?.model.arch;
        Ok(())
    })
}

/// `NVML_GRID_LICENSE_FEATURE_CODE_VGPU`.
const FEATURE_CODE_VGPU: u32 = 1;

/// Bare metal: licensing not supported, no features. A vGPU guest (`vgpu_licence` in the
/// scenario): one vGPU feature, licensed (`featureState` 1) or not (0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGridLicensableFeatures_v4(
    device: nvmlDevice_t,
    features: *mut nvmlGridLicensableFeatures_t,
) -> nvmlReturn_t {
    run(|sim, t| {
        let o = unsafe { out(features) }?;
        let d = dev(sim, device, "nvmlDeviceGetGridLicensableFeatures_v4", t)?;
        // SAFETY: plain C data; all zeroes is a valid value of every field.
        *o = unsafe { std::mem::zeroed() };
        if let Some(licensed) = sim.physical(d)?.vgpu_licence {
            o.isGridLicenseSupported = 1;
            o.licensableFeaturesCount = 1;
            let f = &mut o.gridLicensableFeatures[0];
            f.featureCode = FEATURE_CODE_VGPU;
            f.featureState = c_uint::from(licensed);
            f.featureEnabled = 1;
            fill(&mut f.productName, "NVIDIA Virtual Compute Server");
        }
        Ok(())
    })
}
