//! NVLink per link and the GPU's NVSwitch fabric registration, read through NVML calls that
//! nvml-wrapper does not wrap in the form needed (link error counters including ECC, field
//! values with a link as `scopeId`, `nvmlDeviceGetGpuFabricInfoV`).
//!
//! Owns the raw calls and the per-GPU memory of which links exist and which counters NVML
//! serves. Returns plain data ([`LinkSample`], [`Fabric`]) or NVML errors; it must not decide
//! how an error is logged or counted (the reader's book does) and must not encode.

use std::collections::HashMap;
use std::mem;

use nvml_wrapper::error::{NvmlError, nvml_try};
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::{
    nvmlEnableState_t, nvmlFieldValue_t, nvmlGpuFabricInfo_t, nvmlGpuFabricInfo_v2_t,
    nvmlGpuFabricInfoV_t,
};

use super::sym;
use crate::snapshot::{Fabric, LinkSample};

/// `NVML_NVLINK_MAX_LINKS`: links are probed from 0 to this, exclusive.
pub const MAX_LINKS: u32 = 18;

/// `nvmlNvLinkErrorCounter_t` values with their `error` label.
pub const ERROR_COUNTERS: [(&str, u32); 5] = [
    ("replay", 0),
    ("recovery", 1),
    ("crc_flit", 2),
    ("crc_data", 3),
    ("ecc_data", 4),
];

/// `NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX` / `_RX`: KiB of data payload, per link as scope.
pub const FIELD_DATA_TX: u32 = 138;
/// See [`FIELD_DATA_TX`].
pub const FIELD_DATA_RX: u32 = 139;
/// `NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_ERRORS`: errors FEC could not correct, per link.
pub const FIELD_EFFECTIVE_ERRORS: u32 = 219;
/// `NVML_FI_DEV_NVLINK_COUNT_SYMBOL_ERRORS`: symbol errors (FEC corrected them), per link.
pub const FIELD_SYMBOL_ERRORS: u32 = 221;
/// `NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_BER`: the bit error rate after FEC, per link, encoded
/// (see [`decode_ber`]).
pub const FIELD_EFFECTIVE_BER: u32 = 220;
/// `NVML_FI_DEV_NVLINK_COUNT_SYMBOL_BER`: the symbol bit error rate, per link, encoded.
pub const FIELD_SYMBOL_BER: u32 = 222;

/// The effective (after FEC) bit error rate above which DCGM's health checks fail an NVLink
/// 5 link; `check`, the landing page and the `GpuNvlinkEffectiveBerHigh` alert use it too.
pub const EFFECTIVE_BER_LIMIT: f64 = 1e-12;

/// An NVLink bit error rate from NVML's encoding (`NVML_NVLINK_BER_MANTISSA_*` and
/// `NVML_NVLINK_BER_EXP_*` in `nvml.h`): mantissa in bits 8–11, exponent in bits 0–7, the rate
/// being mantissa × 10^-exponent. Mantissa 15 with exponent 255 is how NVML says 0.
pub fn decode_ber(raw: u64) -> f64 {
    let mantissa = (raw >> 8) & 0xf;
    let exponent = raw & 0xff;
    if mantissa == 15 && exponent == 255 {
        return 0.0;
    }
    mantissa as f64 * 10f64.powi(-(exponent as i32))
}

/// Whether NVML field `id` takes the link as `scopeId` (`UINT_MAX`: every link summed): the
/// NVLink throughput counters (138–141) and NVLink 5's counters, error rates and FEC history
/// (201–204, 206–215, 219–222, 235–250), the set DCGM reads with `UINT_MAX` for a GPU's total.
pub fn is_link_scoped(id: u32) -> bool {
    matches!(id, 138..=141 | 201..=204 | 206..=215 | 219..=222 | 235..=250)
}

/// A link index NVML rejects is a link the GPU does not have: reported as not supported so
/// that it is left out, never exported as 0 or counted as a failure.
fn absent_link(e: NvmlError) -> NvmlError {
    match e {
        NvmlError::InvalidArg => NvmlError::NotSupported,
        e => e,
    }
}

/// `nvmlDeviceGetNvLinkState`: whether the link is active.
pub fn link_state(nvml: &Nvml, dev: &Device<'_>, link: u32) -> Result<bool, NvmlError> {
    let f = sym(nvml.lib().nvmlDeviceGetNvLinkState.as_ref())?;
    let mut state: nvmlEnableState_t = 0;
    // SAFETY: the handle comes from nvml-wrapper and is valid while `nvml` lives; `state` is
    // a valid out-pointer for the duration of the call.
    nvml_try(unsafe { f(dev.handle(), link, &mut state) }).map_err(absent_link)?;
    Ok(state != 0)
}

/// `nvmlDeviceGetNvLinkErrorCounter` for one link and `nvmlNvLinkErrorCounter_t`.
pub fn error_counter(
    nvml: &Nvml,
    dev: &Device<'_>,
    link: u32,
    counter: u32,
) -> Result<u64, NvmlError> {
    let f = sym(nvml.lib().nvmlDeviceGetNvLinkErrorCounter.as_ref())?;
    let mut v: u64 = 0;
    // SAFETY: as in `link_state`; `v` is a valid out-pointer.
    nvml_try(unsafe { f(dev.handle(), link, counter, &mut v) }).map_err(absent_link)?;
    Ok(v)
}

/// One entry of [`scoped_fields`]: the value as f64 with its time stamp (µs), or its error.
pub type ScopedValue = Result<(f64, i64), NvmlError>;

/// One `nvmlDeviceGetFieldValues` call with a scope per entry (`(field id, scope id)`): each
/// entry's value as f64 with its time stamp (µs), or that entry's own error.
pub fn scoped_fields(
    nvml: &Nvml,
    dev: &Device<'_>,
    req: &[(u32, u32)],
) -> Result<Vec<ScopedValue>, NvmlError> {
    if req.is_empty() {
        return Ok(Vec::new());
    }
    let f = sym(nvml.lib().nvmlDeviceGetFieldValues.as_ref())?;
    let mut vals: Vec<nvmlFieldValue_t> = req
        .iter()
        .map(|(id, scope)| {
            // SAFETY: nvmlFieldValue_t is plain C data; all-zero is a valid value.
            let mut v: nvmlFieldValue_t = unsafe { mem::zeroed() };
            v.fieldId = *id;
            v.scopeId = *scope;
            v
        })
        .collect();
    let n = i32::try_from(vals.len()).map_err(|_| NvmlError::InvalidArg)?;
    // SAFETY: `vals` holds `n` initialised entries that NVML fills in place.
    nvml_try(unsafe { f(dev.handle(), n, vals.as_mut_ptr()) })?;
    Ok(vals
        .iter()
        .map(|v| {
            nvml_try(v.nvmlReturn).map_err(absent_link)?;
            // SAFETY: the union member read is the one `valueType` names.
            let x = unsafe {
                match v.valueType {
                    0 => v.value.dVal,
                    1 => f64::from(v.value.uiVal),
                    2 => v.value.ulVal as f64,
                    3 => v.value.ullVal as f64,
                    4 => v.value.sllVal as f64,
                    5 => f64::from(v.value.siVal),
                    6 => f64::from(v.value.usVal),
                    _ => return Err(NvmlError::UnexpectedVariant(v.valueType)),
                }
            };
            Ok((x, v.timestamp))
        })
        .collect())
}

/// The fabric registration (`nvmlDeviceGetGpuFabricInfoV` v3, then v2, then the v1
/// `nvmlDeviceGetGpuFabricInfo` on older drivers). `NotSupported` off an NVSwitch fabric.
pub fn fabric(nvml: &Nvml, dev: &Device<'_>) -> Result<Fabric, NvmlError> {
    let lib = nvml.lib();
    if let Ok(f) = lib.nvmlDeviceGetGpuFabricInfoV.as_ref() {
        // SAFETY: plain C data; all-zero is valid.
        let mut v3: nvmlGpuFabricInfoV_t = unsafe { mem::zeroed() };
        v3.version = mem::size_of::<nvmlGpuFabricInfoV_t>() as u32 | (3 << 24);
        // SAFETY: valid handle and out-pointer, version set as NVML requires.
        match nvml_try(unsafe { f(dev.handle(), &mut v3) }) {
            Ok(()) => {
                return Ok(Fabric {
                    cluster_uuid: uuid_text(&v3.clusterUuid),
                    clique_id: v3.cliqueId,
                    state: v3.state,
                    status: v3.status,
                    health_mask: Some(v3.healthMask),
                    health_summary: Some(v3.healthSummary),
                });
            }
            // A driver that knows only the v2 layout.
            Err(NvmlError::Unknown) | Err(NvmlError::InvalidArg) => {}
            Err(NvmlError::UnexpectedVariant(25)) => {}
            Err(e) => return Err(e),
        }
        // SAFETY: as above, with the v2 struct (a prefix of v3's layout).
        let mut v2: nvmlGpuFabricInfo_v2_t = unsafe { mem::zeroed() };
        v2.version = mem::size_of::<nvmlGpuFabricInfo_v2_t>() as u32 | (2 << 24);
        let p = (&mut v2 as *mut nvmlGpuFabricInfo_v2_t).cast::<nvmlGpuFabricInfoV_t>();
        // SAFETY: NVML reads the version first and writes only the v2 fields for v2.
        nvml_try(unsafe { f(dev.handle(), p) })?;
        return Ok(Fabric {
            cluster_uuid: uuid_text(&v2.clusterUuid),
            clique_id: v2.cliqueId,
            state: v2.state,
            status: v2.status,
            health_mask: Some(v2.healthMask),
            health_summary: None,
        });
    }
    let f = sym(lib.nvmlDeviceGetGpuFabricInfo.as_ref())?;
    // SAFETY: plain C data; all-zero is valid.
    let mut v1: nvmlGpuFabricInfo_t = unsafe { mem::zeroed() };
    // SAFETY: valid handle and out-pointer.
    nvml_try(unsafe { f(dev.handle(), &mut v1) })?;
    Ok(Fabric {
        cluster_uuid: uuid_text(&v1.clusterUuid),
        clique_id: v1.cliqueId,
        state: v1.state,
        status: v1.status,
        health_mask: None,
        health_summary: None,
    })
}

/// `NVML_GPU_FABRIC_STATE_COMPLETED`.
pub const FABRIC_COMPLETED: u8 = 3;

/// One number of a fabric registration as DCGM's fabric fields carry it; `None` where the
/// registration has not got that far or the driver does not report it.
pub fn fabric_part(f: &Fabric, part: crate::catalogue::FabricPart) -> Option<f64> {
    use crate::catalogue::FabricPart as P;
    match part {
        // DCGM: 1 not started, 2 in progress, 3 success, 4 failure.
        P::ManagerStatus => match f.state {
            1 | 2 => Some(f64::from(f.state)),
            FABRIC_COMPLETED if f.status == 0 => Some(3.0),
            FABRIC_COMPLETED => Some(4.0),
            _ => None,
        },
        P::ErrorCode => (f.state == FABRIC_COMPLETED).then_some(f64::from(f.status)),
        P::CliqueId => (f.state == FABRIC_COMPLETED).then_some(f64::from(f.clique_id)),
        P::HealthMask => f.health_mask.map(f64::from),
        P::HealthSummary => f.health_summary.map(f64::from),
    }
}

/// 16 bytes as `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
pub fn uuid_text(b: &[u8; 16]) -> String {
    let hex: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        hex[0..4].concat(),
        hex[4..6].concat(),
        hex[6..8].concat(),
        hex[8..10].concat(),
        hex[10..16].concat()
    )
}

/// What is remembered about one GPU's links between ticks.
#[derive(Debug, Default)]
pub struct LinkMemory {
    /// The links the GPU has (probed once), `None` until probed.
    links: Option<Vec<u32>>,
    /// Error counters NVML reported unsupported on this GPU (by counter value).
    unsupported_counters: Vec<u32>,
    /// Whether the throughput fields are unsupported on this GPU.
    no_bytes: bool,
    /// Whether the FEC counters (symbol and effective errors) are unsupported on this GPU.
    no_fec: bool,
    /// Whether the bit error rates are unsupported on this GPU.
    no_ber: bool,
    /// The last data-counter reading per (link, direction: 0 sent, 1 received): KiB and
    /// its NVML time stamp (µs), for the per-link rates.
    last_bytes: HashMap<(u32, u8), (f64, i64)>,
}

/// The change per second between two readings of a counter, each (value, NVML time stamp in
/// µs); `None` without an earlier reading, when time did not move or when the counter went
/// back (a driver reload).
pub fn per_second(prev: Option<(f64, i64)>, now: (f64, i64)) -> Option<f64> {
    let (p, pt) = prev?;
    let (v, t) = now;
    (t > pt && v >= p).then(|| (v - p) / ((t - pt) as f64 / 1e6))
}

/// Whether the link lets errors past FEC at a rate above [`EFFECTIVE_BER_LIMIT`].
pub fn errors_past_fec(l: &LinkSample) -> bool {
    l.effective_ber.is_some_and(|r| r > EFFECTIVE_BER_LIMIT)
}

/// Per-link reading of every GPU, remembering per GPU UUID what exists.
#[derive(Debug, Default)]
pub struct LinkReader {
    gpus: HashMap<String, LinkMemory>,
}

/// What one GPU's link read gave: the samples, and the errors met that are neither "absent"
/// nor "lost" (for the reader to count), by step name.
pub struct LinkRead {
    /// One sample per link the GPU has.
    pub links: Vec<LinkSample>,
    /// Failed reads by step (`nvlink_state`, `nvlink_errors`, `nvlink_throughput`).
    pub failures: Vec<(&'static str, NvmlError)>,
}

impl LinkReader {
    /// Whether the GPU with this UUID was probed and has no NVLink link at all.
    pub fn has_no_links(&self, uuid: &str) -> bool {
        self.gpus
            .get(uuid)
            .is_some_and(|m| m.links.as_ref().is_some_and(Vec::is_empty))
    }

    /// Forgets GPUs that are not in `keep` (UUIDs).
    pub fn retain(&mut self, keep: &dyn Fn(&str) -> bool) {
        self.gpus.retain(|k, _| keep(k));
    }

    /// Reads every link of one GPU: its state, error counters, FEC counters and bit error
    /// rates, and with `throughput` its data counters (the byte totals and rates, which only
    /// per-link series use: leaving them out saves one call with two entries per link).
    /// `Err(GpuLost)` when the GPU fell off mid-read.
    pub fn read(
        &mut self,
        nvml: &Nvml,
        dev: &Device<'_>,
        uuid: &str,
        throughput: bool,
    ) -> Result<LinkRead, NvmlError> {
        let mem = self.gpus.entry(uuid.to_owned()).or_default();
        let mut failures = Vec::new();
        let Some(states) = mem.states(nvml, dev, &mut failures)? else {
            return Ok(LinkRead {
                links: Vec::new(),
                failures,
            });
        };
        let links: Vec<u32> = states.iter().map(|(l, _)| *l).collect();
        let fields = mem.fields(nvml, dev, &links, throughput, &mut failures)?;
        let mut out = Vec::with_capacity(states.len());
        for (i, (link, up)) in states.into_iter().enumerate() {
            let tx_rate = mem.rate(link, 0, fields.bytes.get(2 * i));
            let rx_rate = mem.rate(link, 1, fields.bytes.get(2 * i + 1));
            let errors = mem.error_counters(nvml, dev, link, &mut failures)?;
            out.push(LinkSample {
                link,
                up,
                errors,
                tx_bytes: kib(fields.bytes.get(2 * i)),
                rx_bytes: kib(fields.bytes.get(2 * i + 1)),
                tx_rate,
                rx_rate,
                symbol_errors: count(fields.fec.get(2 * i)),
                effective_errors: count(fields.fec.get(2 * i + 1)),
                symbol_ber: ratio(fields.ber.get(2 * i)),
                effective_ber: ratio(fields.ber.get(2 * i + 1)),
            });
        }
        Ok(LinkRead {
            links: out,
            failures,
        })
    }
}

/// One GPU's field values for every link read, two entries per link (see
/// [`per_link_fields`]); each empty when not read.
struct LinkFields {
    /// KiB sent and received.
    bytes: Vec<ScopedValue>,
    /// Symbol and effective errors.
    fec: Vec<ScopedValue>,
    /// Symbol and effective bit error rates, encoded.
    ber: Vec<ScopedValue>,
}

impl LinkMemory {
    /// The state (up or not) of each link the GPU has, probing which it has on the first
    /// read: a link exists when NVML answers for it. `None` when a probe met a transient
    /// failure (recorded in `failures`), which leaves the probe for the next tick. A failed
    /// state of a known link is recorded and the link left out; a lost GPU returned.
    fn states(
        &mut self,
        nvml: &Nvml,
        dev: &Device<'_>,
        failures: &mut Vec<(&'static str, NvmlError)>,
    ) -> Result<Option<Vec<(u32, bool)>>, NvmlError> {
        let mut states = Vec::new();
        match &self.links {
            Some(links) => {
                for &l in links {
                    match link_state(nvml, dev, l) {
                        Ok(up) => states.push((l, up)),
                        Err(NvmlError::GpuLost) => return Err(NvmlError::GpuLost),
                        Err(e) => failures.push(("nvlink_state", e)),
                    }
                }
            }
            None => {
                let mut found = Vec::new();
                for l in 0..MAX_LINKS {
                    match link_state(nvml, dev, l) {
                        Ok(up) => {
                            found.push(l);
                            states.push((l, up));
                        }
                        Err(NvmlError::GpuLost) => return Err(NvmlError::GpuLost),
                        Err(e) if is_absent(&e) => {}
                        Err(e) => {
                            failures.push(("nvlink_state", e));
                            return Ok(None);
                        }
                    }
                }
                self.links = Some(found);
            }
        }
        Ok(Some(states))
    }

    /// Up to three field-values calls per GPU, each for every link in `links`: the
    /// throughput counters (KiB, with `throughput`), the FEC counters, then the bit error
    /// rates; a pair is no longer asked for once NVML says the GPU lacks it.
    fn fields(
        &mut self,
        nvml: &Nvml,
        dev: &Device<'_>,
        links: &[u32],
        throughput: bool,
        failures: &mut Vec<(&'static str, NvmlError)>,
    ) -> Result<LinkFields, NvmlError> {
        let bytes = if throughput {
            per_link_fields(
                nvml,
                dev,
                links,
                [FIELD_DATA_TX, FIELD_DATA_RX],
                &mut self.no_bytes,
                failures,
            )?
        } else {
            // A rate later on starts from a fresh reading, not from one long ago.
            self.last_bytes.clear();
            Vec::new()
        };
        let fec = per_link_fields(
            nvml,
            dev,
            links,
            [FIELD_SYMBOL_ERRORS, FIELD_EFFECTIVE_ERRORS],
            &mut self.no_fec,
            failures,
        )?;
        let ber = per_link_fields(
            nvml,
            dev,
            links,
            [FIELD_SYMBOL_BER, FIELD_EFFECTIVE_BER],
            &mut self.no_ber,
            failures,
        )?;
        Ok(LinkFields { bytes, fec, ber })
    }

    /// The bytes per second of `link` in direction `dir` (0 sent, 1 received) from its data
    /// counter `r` (KiB) and the reading remembered before, which `r` replaces.
    fn rate(&mut self, link: u32, dir: u8, r: Option<&ScopedValue>) -> Option<f64> {
        match r {
            Some(Ok(now)) => {
                per_second(self.last_bytes.insert((link, dir), *now), *now).map(|kib| kib * 1024.0)
            }
            _ => None,
        }
    }

    /// The error counters of `link` (by `error` label) NVML serves on this GPU; one it
    /// reports unsupported is no longer asked for, a failure is recorded, a lost GPU returned.
    fn error_counters(
        &mut self,
        nvml: &Nvml,
        dev: &Device<'_>,
        link: u32,
        failures: &mut Vec<(&'static str, NvmlError)>,
    ) -> Result<Vec<(&'static str, u64)>, NvmlError> {
        let mut errors = Vec::new();
        for (name, counter) in ERROR_COUNTERS {
            if self.unsupported_counters.contains(&counter) {
                continue;
            }
            match error_counter(nvml, dev, link, counter) {
                Ok(v) => errors.push((name, v)),
                Err(NvmlError::GpuLost) => return Err(NvmlError::GpuLost),
                Err(e) if is_absent(&e) => self.unsupported_counters.push(counter),
                Err(e) => failures.push(("nvlink_errors", e)),
            }
        }
        Ok(errors)
    }
}

/// A field value read as a count; `None` when it was not read.
fn count(r: Option<&ScopedValue>) -> Option<u64> {
    match r {
        Some(Ok((v, _))) => Some(*v as u64),
        _ => None,
    }
}

/// A data counter (KiB) in bytes; `None` when it was not read.
fn kib(r: Option<&ScopedValue>) -> Option<u64> {
    count(r).map(|v| v.saturating_mul(1024))
}

/// A bit error rate from its encoded field value ([`decode_ber`]); `None` when it was not
/// read.
fn ratio(r: Option<&ScopedValue>) -> Option<f64> {
    match r {
        Some(Ok((v, _))) => Some(decode_ber(*v as u64)),
        _ => None,
    }
}

/// Fields `pair` of every link in `links` in one call, two entries per link in that order;
/// empty when `absent` (this GPU does not have them), which an all-absent answer sets. A
/// failure of the call is recorded, a lost GPU returned.
fn per_link_fields(
    nvml: &Nvml,
    dev: &Device<'_>,
    links: &[u32],
    pair: [u32; 2],
    absent: &mut bool,
    failures: &mut Vec<(&'static str, NvmlError)>,
) -> Result<Vec<ScopedValue>, NvmlError> {
    if *absent || links.is_empty() {
        return Ok(Vec::new());
    }
    let req: Vec<(u32, u32)> = links
        .iter()
        .flat_map(|l| [(pair[0], *l), (pair[1], *l)])
        .collect();
    match scoped_fields(nvml, dev, &req) {
        Ok(v) => {
            if v.iter().all(|r| matches!(r, Err(e) if is_absent(e))) {
                *absent = true;
            }
            Ok(v)
        }
        Err(NvmlError::GpuLost) => Err(NvmlError::GpuLost),
        Err(e) if is_absent(&e) => {
            *absent = true;
            Ok(Vec::new())
        }
        Err(e) => {
            failures.push(("nvlink_fields", e));
            Ok(Vec::new())
        }
    }
}

/// Errors that mean "this does not exist here" rather than "this failed".
pub fn is_absent(e: &NvmlError) -> bool {
    matches!(
        e,
        NvmlError::NotSupported | NvmlError::FailedToLoadSymbol(_) | NvmlError::FunctionNotFound
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_text_is_grouped_like_a_uuid() {
        let b: [u8; 16] = [
            0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
            0xcd, 0xef,
        ];
        assert_eq!(uuid_text(&b), "12345678-9abc-def0-0123-456789abcdef");
    }

    #[test]
    fn fabric_parts_follow_dcgms_numbering() {
        use crate::catalogue::FabricPart as P;
        let f = |state, status| Fabric {
            cluster_uuid: String::new(),
            clique_id: 7,
            state,
            status,
            health_mask: Some(0),
            health_summary: None,
        };
        assert_eq!(fabric_part(&f(3, 0), P::ManagerStatus), Some(3.0));
        assert_eq!(fabric_part(&f(3, 0x10), P::ManagerStatus), Some(4.0));
        assert_eq!(fabric_part(&f(3, 0x10), P::ErrorCode), Some(16.0));
        assert_eq!(fabric_part(&f(2, 0), P::ManagerStatus), Some(2.0));
        assert_eq!(fabric_part(&f(2, 0), P::ErrorCode), None);
        assert_eq!(fabric_part(&f(2, 0), P::CliqueId), None);
        assert_eq!(fabric_part(&f(3, 0), P::CliqueId), Some(7.0));
        assert_eq!(fabric_part(&f(0, 0), P::ManagerStatus), None);
        assert_eq!(fabric_part(&f(3, 0), P::HealthSummary), None);
    }

    #[test]
    fn bit_error_rates_are_decoded_as_nvml_encodes_them() {
        assert_eq!(decode_ber((15 << 8) | 255), 0.0);
        assert_eq!(decode_ber((1 << 8) | 10), 1e-10);
        assert_eq!(decode_ber((3 << 8) | 12), 3e-12);
        assert_eq!(decode_ber(0), 0.0);
    }

    #[test]
    fn link_rates_need_two_readings_that_move_forward() {
        assert_eq!(per_second(None, (10.0, 1_000_000)), None);
        // 1,024 KiB in half a second: 2,048 KiB/s.
        let r = per_second(Some((0.0, 500_000)), (1024.0, 1_000_000));
        assert_eq!(r, Some(2048.0));
        assert_eq!(per_second(Some((5.0, 1_000_000)), (6.0, 1_000_000)), None);
        assert_eq!(per_second(Some((5.0, 1_000_000)), (4.0, 2_000_000)), None);
    }

    #[test]
    fn nvlink_5_counters_are_link_scoped_and_others_are_not() {
        for id in [138, 141, 201, 204, 206, 215, 219, 222, 235, 250] {
            assert!(is_link_scoped(id), "{id}");
        }
        for id in [137, 142, 150, 160, 200, 205, 216, 218, 223, 234, 251] {
            assert!(!is_link_scoped(id), "{id}");
        }
    }

    #[test]
    fn an_invalid_link_index_reads_as_absent() {
        assert!(is_absent(&absent_link(NvmlError::InvalidArg)));
        assert!(!is_absent(&absent_link(NvmlError::Timeout)));
    }
}
