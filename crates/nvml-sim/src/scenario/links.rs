//! NVLink links and the NVSwitch fabric of a scenario GPU over time: which links are up
//! (`nvlink_down` faults), each link's share of the NVLink error counters (`nvlink_errors`
//! faults, on one link or spread), and the fabric registration and health that `fabric`
//! faults override.
//!
//! Owns the resolved shapes and their queries by time only. Parsing and validation live in
//! `faults`; NVML semantics (return codes, how traffic splits over links) live in
//! `sim::nvlink`. Must not read clocks or global state.

use nvml_wrapper_sys::bindings::{
    NVML_GPU_FABRIC_HEALTH_MASK_ACCESS_TIMEOUT_RECOVERY_FALSE,
    NVML_GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_FALSE, NVML_GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_TRUE,
    NVML_GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_NONE,
    NVML_GPU_FABRIC_HEALTH_MASK_ROUTE_RECOVERY_FALSE,
    NVML_GPU_FABRIC_HEALTH_MASK_ROUTE_UNHEALTHY_FALSE,
    NVML_GPU_FABRIC_HEALTH_MASK_ROUTE_UNHEALTHY_TRUE,
    NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ACCESS_TIMEOUT_RECOVERY,
    NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW,
    NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_INCORRECT_CONFIGURATION,
    NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_RECOVERY,
    NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_UNHEALTHY, NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY,
    NVML_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY, NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY,
    NVML_GPU_FABRIC_STATE_COMPLETED, NVML_GPU_FABRIC_STATE_IN_PROGRESS,
    NVML_GPU_FABRIC_STATE_NOT_STARTED,
};

use super::{Counter, Gpu, Window};

/// One NVLink link down inside a window (`nvlink_down`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkDown {
    pub link: u32,
    pub window: Window,
}

/// The fabric health a `fabric` fault reports (`healthSummary` and a matching `healthMask`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FabricHealth {
    /// `NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY` (1).
    Healthy,
    /// `NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY` (2): an unhealthy route.
    Unhealthy,
    /// `NVML_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY` (3): degraded bandwidth.
    LimitedCapacity,
}

/// Names of [`FabricHealth`] values in scenario files.
pub(super) const FABRIC_HEALTH_NAMES: &[(&str, FabricHealth)] = &[
    ("healthy", FabricHealth::Healthy),
    ("unhealthy", FabricHealth::Unhealthy),
    ("limited_capacity", FabricHealth::LimitedCapacity),
];

/// Names of `nvmlGpuFabricState_t` values in scenario files.
pub(super) const FABRIC_STATE_NAMES: &[(&str, u8)] = &[
    ("not_started", NVML_GPU_FABRIC_STATE_NOT_STARTED as u8),
    ("in_progress", NVML_GPU_FABRIC_STATE_IN_PROGRESS as u8),
    ("completed", NVML_GPU_FABRIC_STATE_COMPLETED as u8),
];

/// One field of the health mask: `value` at `shift`.
const fn mask_field(value: u32, shift: u32) -> u32 {
    value << shift
}

/// Health mask with every condition reported and absent.
const HEALTHY_MASK: u32 = mask_field(
    NVML_GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_FALSE,
    NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW,
) | mask_field(
    NVML_GPU_FABRIC_HEALTH_MASK_ROUTE_RECOVERY_FALSE,
    NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_RECOVERY,
) | mask_field(
    NVML_GPU_FABRIC_HEALTH_MASK_ROUTE_UNHEALTHY_FALSE,
    NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_UNHEALTHY,
) | mask_field(
    NVML_GPU_FABRIC_HEALTH_MASK_ACCESS_TIMEOUT_RECOVERY_FALSE,
    NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ACCESS_TIMEOUT_RECOVERY,
) | mask_field(
    NVML_GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_NONE,
    NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_INCORRECT_CONFIGURATION,
);

impl FabricHealth {
    /// `nvmlGpuFabricInfo_v3_t.healthSummary`.
    pub fn summary(self) -> u8 {
        let v = match self {
            FabricHealth::Healthy => NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY,
            FabricHealth::Unhealthy => NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY,
            FabricHealth::LimitedCapacity => NVML_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY,
        };
        v as u8
    }

    /// `healthMask`: every condition reported; limited capacity has degraded bandwidth, an
    /// unhealthy fabric an unhealthy route.
    pub fn mask(self) -> u32 {
        match self {
            FabricHealth::Healthy => HEALTHY_MASK,
            FabricHealth::LimitedCapacity => {
                let field = 0b11 << NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW;
                (HEALTHY_MASK & !field)
                    | mask_field(
                        NVML_GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_TRUE,
                        NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW,
                    )
            }
            FabricHealth::Unhealthy => {
                let field = 0b11 << NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_UNHEALTHY;
                (HEALTHY_MASK & !field)
                    | mask_field(
                        NVML_GPU_FABRIC_HEALTH_MASK_ROUTE_UNHEALTHY_TRUE,
                        NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_UNHEALTHY,
                    )
            }
        }
    }
}

/// A `fabric` fault: inside the window the given parts of the registration replace the
/// normal ones (state completed, status success, healthy).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FabricFault {
    pub window: Window,
    /// `nvmlGpuFabricState_t`.
    pub state: Option<u8>,
    /// `nvmlReturn_t` of the registration.
    pub status: Option<u32>,
    pub health: Option<FabricHealth>,
}

/// The share link `link` gets of `amount` errors spread over `links` links: `amount / links`
/// each, and one more on each of the first `amount % links` links.
pub fn spread(amount: u64, link: u32, links: u32) -> u64 {
    if links == 0 || link >= links {
        return 0;
    }
    let n = u64::from(links);
    amount / n + u64::from(u64::from(link) < amount % n)
}

impl Gpu {
    /// Bit `l` set for every link `l` of the model that is up at `t`.
    pub fn links_up(&self, t: f64) -> u32 {
        let all = match self.model.nvlink_links {
            0 => 0,
            n if n >= 32 => u32::MAX,
            n => (1u32 << n) - 1,
        };
        self.links_down
            .iter()
            .filter(|d| d.window.contains(t) && d.link < 32)
            .fold(all, |m, d| m & !(1u32 << d.link))
    }

    /// Whether link `link` exists and is up at `t`.
    pub fn link_up(&self, link: u32, t: f64) -> bool {
        link < 32 && self.links_up(t) & (1u32 << link) != 0
    }

    /// Whether the GPU moves NVLink traffic at `t`: it has NVLink and a link is up.
    pub fn carries_nvlink(&self, t: f64) -> bool {
        self.links_up(t) != 0
    }

    /// Value of an NVLink error counter on one link at `t`: the bumps on that link plus its
    /// share of the bumps spread over every link. Summed over the links it is the GPU total.
    pub fn link_counter(&self, counter: Counter, link: u32, t: f64) -> u64 {
        let links = self.model.nvlink_links;
        self.bumps
            .iter()
            .filter(|b| b.counter == counter && b.at <= t)
            .map(|b| match b.link {
                Some(l) if l == link => b.amount,
                Some(_) => 0,
                None => spread(b.amount, link, links),
            })
            .fold(0u64, u64::saturating_add)
    }

    /// Times after 0 at which the set of up links may change, sorted and distinct.
    pub fn link_breaks(&self) -> Vec<f64> {
        let mut breaks: Vec<f64> = self
            .links_down
            .iter()
            .flat_map(|d| [d.window.from, d.window.until])
            .filter(|b| b.is_finite() && *b > 0.0)
            .collect();
        breaks.sort_by(f64::total_cmp);
        breaks.dedup();
        breaks
    }

    /// The `fabric` fault in force at `t`: of those whose window holds `t`, the one that
    /// started last (file order among equals).
    pub fn fabric_at(&self, t: f64) -> Option<&FabricFault> {
        self.fabric
            .iter()
            .filter(|f| f.window.contains(t))
            .max_by(|a, b| a.window.from.total_cmp(&b.window.from))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_adds_up_and_favours_low_links() {
        for amount in [0, 1, 17, 18, 40, 1000] {
            let sum: u64 = (0..18).map(|l| spread(amount, l, 18)).sum();
            assert_eq!(sum, amount);
        }
        assert_eq!(spread(40, 0, 18), 3);
        assert_eq!(spread(40, 3, 18), 3);
        assert_eq!(spread(40, 4, 18), 2);
        assert_eq!(spread(5, 18, 18), 0);
        assert_eq!(spread(5, 0, 0), 0);
    }

    #[test]
    fn health_masks() {
        assert_eq!(
            FabricHealth::Healthy.mask(),
            2 | 2 << 2 | 2 << 4 | 2 << 6 | 1 << 8
        );
        assert_eq!(FabricHealth::LimitedCapacity.mask() & 0b11, 1);
        assert_eq!(FabricHealth::Unhealthy.mask() >> 4 & 0b11, 1);
        assert_eq!(
            FabricHealth::Unhealthy.mask() & !(0b11 << 4),
            FabricHealth::Healthy.mask() & !(0b11 << 4)
        );
        assert_eq!(FabricHealth::Healthy.summary(), 1);
        assert_eq!(FabricHealth::Unhealthy.summary(), 2);
        assert_eq!(FabricHealth::LimitedCapacity.summary(), 3);
    }
}
