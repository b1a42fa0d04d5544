//! Opaque handles handed to NVML callers: devices, MIG devices, event sets and GPM samples
//! are small tagged integers cast to pointers, never dereferenced, and validated on the way
//! back in. A handle stays valid across calls for as long as what it names exists.
//!
//! Owns the encoding only; whether the named thing exists is for `sim` to decide.

use nvml_wrapper_sys::bindings::{
    nvmlDevice_st, nvmlDevice_t, nvmlEventSet_st, nvmlEventSet_t, nvmlGpmSample_st, nvmlGpmSample_t,
};

use crate::sim::Dev;

#[cfg(not(target_pointer_width = "64"))]
compile_error!("nvml-sim encodes handles in 64-bit pointers");

const TAG_MASK: usize = 0xFFFF_FF00_0000_0000;
const PAYLOAD_MASK: usize = !TAG_MASK;
const TAG_GPU: usize = 0x4E56_4700_0000_0000;
const TAG_MIG: usize = 0x4E56_4D00_0000_0000;
const TAG_EVENT_SET: usize = 0x4E56_4500_0000_0000;
const TAG_SAMPLE: usize = 0x4E56_5300_0000_0000;

fn split(addr: usize) -> (usize, usize) {
    (addr & TAG_MASK, addr & PAYLOAD_MASK)
}

/// The handle of a device.
pub fn device(dev: Dev) -> nvmlDevice_t {
    let addr = match dev {
        Dev::Gpu(g) => TAG_GPU | (g & 0xFFFF),
        Dev::Mig(g, uid) => TAG_MIG | ((g & 0xFFFF) << 16) | (uid & 0xFFFF),
    };
    std::ptr::without_provenance_mut::<nvmlDevice_st>(addr)
}

/// The device a handle names, if it is a device handle at all.
pub fn to_device(h: nvmlDevice_t) -> Option<Dev> {
    match split(h.addr()) {
        (TAG_GPU, p) => Some(Dev::Gpu(p)),
        (TAG_MIG, p) => Some(Dev::Mig(p >> 16, p & 0xFFFF)),
        _ => None,
    }
}

/// The handle of event set `id`.
pub fn event_set(id: u64) -> nvmlEventSet_t {
    std::ptr::without_provenance_mut::<nvmlEventSet_st>(
        TAG_EVENT_SET | (id as usize & PAYLOAD_MASK),
    )
}

/// The event set id of a handle.
pub fn to_event_set(h: nvmlEventSet_t) -> Option<u64> {
    match split(h.addr()) {
        (TAG_EVENT_SET, p) => Some(p as u64),
        _ => None,
    }
}

/// The handle of GPM sample `id`.
pub fn sample(id: u64) -> nvmlGpmSample_t {
    std::ptr::without_provenance_mut::<nvmlGpmSample_st>(TAG_SAMPLE | (id as usize & PAYLOAD_MASK))
}

/// The GPM sample id of a handle.
pub fn to_sample(h: nvmlGpmSample_t) -> Option<u64> {
    match split(h.addr()) {
        (TAG_SAMPLE, p) => Some(p as u64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_foreign_pointers() {
        for d in [Dev::Gpu(0), Dev::Gpu(7), Dev::Mig(5, 2), Dev::Mig(63, 40)] {
            let h = device(d);
            assert!(!h.is_null());
            assert_eq!(to_device(h), Some(d));
        }
        assert_eq!(to_event_set(event_set(42)), Some(42));
        assert_eq!(to_sample(sample(9)), Some(9));
        assert_eq!(to_device(std::ptr::null_mut()), None);
        assert_eq!(to_sample(event_set(1).cast()), None);
        assert_eq!(to_device(sample(1).cast()), None);
    }
}
