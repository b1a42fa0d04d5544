//! Device selection: the model of which GPUs and MIG instances to export
//! ([`DeviceSelection`]), built from a `-d/--devices` value.
//!
//! The value is read by the grammar in `selection_grammar` (`f`, `g[:LIST]`, `i[:LIST]`,
//! several specs per value; its header describes it), which hands this module one item at a
//! time; the result is the union of the specs, and `f` with anything is `f`. This module owns what the
//! items mean for GPUs and MIG instances, the bounds on their numbers ([`MAX_GPU`],
//! [`MAX_GPU_INSTANCE`]) and the start-up description; it must not parse text itself.
//!
//! The selection is parsed once at start-up into bit masks and a short sorted list of
//! instance ranges, so the per-tick queries ([`DeviceSelection::wants_gpu`],
//! [`DeviceSelection::wants_instance`], [`DeviceSelection::touches`]) do not allocate.
//! Errors name the flag and quote the offending token.

use std::fmt::Write as _;

use super::selection_grammar::{Bounds, InstanceRange, Item, SYNTAX_BOUNDS, parse_items};
pub use super::selection_grammar::{DeviceSpecError, SpecProblem};

/// Highest GPU index (NVML enumerates at most 64 devices).
pub const MAX_GPU: u32 = 63;

/// Highest GPU instance id accepted (NVML uses small ids, 0..=14 on current parts).
pub const MAX_GPU_INSTANCE: u32 = 255;

/// Which GPUs and MIG instances to export.
///
/// Kept normalised so that two values selecting the same devices compare equal: a flag
/// `all` clears its mask, instance ranges are sorted and merged, and ranges on a GPU whose
/// every instance is wanted are dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSelection {
    /// Physical GPUs whose own series are wanted.
    gpus: GpuSet,
    /// GPUs every MIG instance of which is wanted.
    instance_gpus: GpuSet,
    /// Further MIG instances, by GPU and instance id range.
    instances: Vec<InstanceRange>,
}

/// A set of GPU indices: every GPU, or a mask of indices 0..=63.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct GpuSet {
    all: bool,
    mask: u64,
}

impl GpuSet {
    const ALL: GpuSet = GpuSet { all: true, mask: 0 };
    const NONE: GpuSet = GpuSet {
        all: false,
        mask: 0,
    };

    fn contains(self, gpu: u32) -> bool {
        self.all || (gpu <= MAX_GPU && (self.mask >> gpu) & 1 == 1)
    }

    fn is_empty(self) -> bool {
        !self.all && self.mask == 0
    }
}

/// The bounds of `-d/--devices`.
const DEVICE_BOUNDS: Bounds = Bounds {
    gpu: MAX_GPU,
    instance: MAX_GPU_INSTANCE,
};

impl Default for DeviceSelection {
    fn default() -> Self {
        Self::all()
    }
}

impl DeviceSelection {
    /// Every GPU and every MIG instance (`f`).
    pub const fn all() -> Self {
        DeviceSelection {
            gpus: GpuSet::ALL,
            instance_gpus: GpuSet::ALL,
            instances: Vec::new(),
        }
    }

    /// Parses a device value. `flag` names the flag in error messages, e.g. `-d/--devices`.
    pub fn parse(flag: &str, value: &str) -> Result<Self, DeviceSpecError> {
        let mut gpus = GpuSet::NONE;
        let mut instance_gpus = GpuSet::NONE;
        let mut instances = Vec::new();
        parse_items(flag, value, DEVICE_BOUNDS, |item| match item {
            Item::Flex => {
                gpus.all = true;
                instance_gpus.all = true;
            }
            Item::AllGpus => gpus.all = true,
            Item::Gpus(a, b) => gpus.mask |= range_mask(a, b),
            Item::AllInstances => instance_gpus.all = true,
            Item::InstancesOn(a, b) => instance_gpus.mask |= range_mask(a, b),
            Item::Instances(r) => instances.push(r),
        })?;
        Ok(Self::normalised(gpus, instance_gpus, instances))
    }

    /// Checks that `value` follows the grammar without building a selection. The bounds on
    /// GPU indices and instance ids are not applied: this is for the flags whose entities are
    /// not GPUs (`-s/--switch-devices`, `-p/--cpu-devices`), where dcgm-exporter's lists number
    /// switches, links, CPUs or cores.
    pub fn check_syntax(flag: &str, value: &str) -> Result<(), DeviceSpecError> {
        parse_items(flag, value, SYNTAX_BOUNDS, |_| {})
    }

    fn normalised(
        mut gpus: GpuSet,
        mut instance_gpus: GpuSet,
        mut instances: Vec<InstanceRange>,
    ) -> Self {
        if gpus.all {
            gpus.mask = 0;
        }
        if instance_gpus.all {
            instance_gpus.mask = 0;
        }
        instances.retain(|r| !instance_gpus.contains(r.gpu));
        instances.sort_unstable();
        let mut merged: Vec<InstanceRange> = Vec::with_capacity(instances.len());
        for r in instances {
            match merged.last_mut() {
                Some(m) if m.gpu == r.gpu && r.first <= m.last.saturating_add(1) => {
                    m.last = m.last.max(r.last);
                }
                _ => merged.push(r),
            }
        }
        DeviceSelection {
            gpus,
            instance_gpus,
            instances: merged,
        }
    }

    /// `true` when every GPU and every MIG instance is wanted (`f`, or `g,i`).
    pub fn is_all(&self) -> bool {
        self.gpus.all && self.instance_gpus.all
    }

    /// Whether the physical GPU `gpu`'s own series are wanted.
    pub fn wants_gpu(&self, gpu: u32) -> bool {
        self.gpus.contains(gpu)
    }

    /// Whether the series of MIG instance `gi` (NVML GPU instance id) on GPU `gpu` are wanted.
    pub fn wants_instance(&self, gpu: u32, gi: u32) -> bool {
        self.instance_gpus.contains(gpu)
            || self
                .instances
                .iter()
                .any(|r| r.gpu == gpu && r.first <= gi && gi <= r.last)
    }

    /// Whether anything on GPU `gpu` (the GPU itself or any of its instances) is wanted.
    pub fn touches(&self, gpu: u32) -> bool {
        self.gpus.contains(gpu)
            || self.instance_gpus.contains(gpu)
            || self.instances.iter().any(|r| r.gpu == gpu)
    }

    /// A one-line description for the start-up log, e.g.
    /// `GPUs 0,1; MIG instances 2.7-9, all on GPU 3`.
    pub fn describe(&self) -> String {
        if self.is_all() {
            return "all GPUs and MIG instances".to_owned();
        }
        let mut out = String::new();
        if self.gpus.all {
            out.push_str("all GPUs");
        } else if self.gpus.mask == 0 {
            out.push_str("no GPU-level series");
        } else {
            out.push_str(plural(self.gpus.mask, "GPU ", "GPUs "));
            write_mask(&mut out, self.gpus.mask);
        }
        out.push_str("; ");
        if self.instance_gpus.all {
            out.push_str("all MIG instances");
        } else if self.instance_gpus.is_empty() && self.instances.is_empty() {
            out.push_str("no MIG instances");
        } else if self.instances.is_empty() {
            out.push_str("all MIG instances on ");
            out.push_str(plural(self.instance_gpus.mask, "GPU ", "GPUs "));
            write_mask(&mut out, self.instance_gpus.mask);
        } else {
            let single = self.instance_gpus.is_empty()
                && self.instances.len() == 1
                && self.instances.iter().all(|r| r.first == r.last);
            out.push_str(if single {
                "MIG instance "
            } else {
                "MIG instances "
            });
            for (n, r) in self.instances.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{}.{}", r.gpu, r.first);
                if r.last != r.first {
                    let _ = write!(out, "-{}", r.last);
                }
            }
            if !self.instance_gpus.is_empty() {
                out.push_str(", all on ");
                out.push_str(plural(self.instance_gpus.mask, "GPU ", "GPUs "));
                write_mask(&mut out, self.instance_gpus.mask);
            }
        }
        out
    }
}

/// Bits `a..=b` (both at most 63, `a <= b`).
fn range_mask(a: u32, b: u32) -> u64 {
    (u64::MAX >> (63 - b)) & (u64::MAX << a)
}

fn plural(mask: u64, one: &'static str, many: &'static str) -> &'static str {
    if mask.count_ones() == 1 { one } else { many }
}

/// Writes a mask as `0,1,3-5` (runs of three or more as ranges).
fn write_mask(out: &mut String, mask: u64) {
    let mut first = true;
    let mut i = 0u32;
    while i < 64 {
        if (mask >> i) & 1 == 0 {
            i += 1;
            continue;
        }
        let start = i;
        while i < 64 && (mask >> i) & 1 == 1 {
            i += 1;
        }
        if !first {
            out.push(',');
        }
        first = false;
        if i - 1 == start {
            let _ = write!(out, "{start}");
        } else if i - 1 == start + 1 {
            let _ = write!(out, "{start},{}", i - 1);
        } else {
            let _ = write!(out, "{start}-{}", i - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "-d/--devices";

    fn sel(v: &str) -> DeviceSelection {
        DeviceSelection::parse(D, v).unwrap_or_else(|e| panic!("{v:?}: {e}"))
    }

    fn gpus_of(s: &DeviceSelection) -> Vec<u32> {
        (0..70).filter(|&g| s.wants_gpu(g)).collect()
    }

    #[test]
    fn flex_is_everything() {
        for v in ["f", " f ", "f;", "g:0,f", "f,i:1.2", "i f g"] {
            let s = sel(v);
            assert!(s.is_all(), "{v:?}");
            assert_eq!(s, DeviceSelection::all(), "{v:?}");
        }
        assert_eq!(DeviceSelection::default(), DeviceSelection::all());
        let s = DeviceSelection::all();
        assert!(s.wants_gpu(0) && s.wants_gpu(63) && s.wants_gpu(1000));
        assert!(s.wants_instance(0, 0) && s.wants_instance(7, 14) && s.wants_instance(99, 999));
        assert!(s.touches(5));
        assert_eq!(s.describe(), "all GPUs and MIG instances");
    }

    #[test]
    fn g_and_i_together_are_everything() {
        assert_eq!(sel("g,i"), DeviceSelection::all());
        assert_eq!(sel("i;g"), DeviceSelection::all());
    }

    #[test]
    fn g_alone_is_every_gpu_and_no_instance() {
        let s = sel("g");
        assert!(!s.is_all());
        assert!(s.wants_gpu(0) && s.wants_gpu(63));
        assert!(!s.wants_instance(0, 1));
        assert!(s.touches(3));
        assert_eq!(s.describe(), "all GPUs; no MIG instances");
    }

    #[test]
    fn i_alone_is_every_instance_and_no_gpu() {
        let s = sel("i");
        assert!(!s.is_all());
        assert!(!s.wants_gpu(0));
        assert!(s.wants_instance(0, 1) && s.wants_instance(63, 14));
        assert!(s.touches(3));
        assert_eq!(s.describe(), "no GPU-level series; all MIG instances");
    }

    #[test]
    fn gpu_lists() {
        let s = sel("g:0,2-4");
        assert_eq!(gpus_of(&s), [0, 2, 3, 4]);
        assert!(!s.wants_instance(0, 0));
        assert_eq!(s.describe(), "GPUs 0,2-4; no MIG instances");
        assert_eq!(gpus_of(&sel("g:7")), [7]);
        assert_eq!(sel("g:7").describe(), "GPU 7; no MIG instances");
        assert_eq!(gpus_of(&sel("g:3-3")), [3]);
        assert_eq!(gpus_of(&sel("g:0-63")), (0..64).collect::<Vec<_>>());
        assert_eq!(gpus_of(&sel("g:63")), [63]);
        assert_eq!(gpus_of(&sel("g:007")), [7]);
        // Overlapping items and repeated specs are a union.
        assert_eq!(sel("g:1-3,2-5,g:9"), sel("g:1-5,9"));
        assert_eq!(sel("g:1-5,9").describe(), "GPUs 1-5,9; no MIG instances");
    }

    #[test]
    fn instance_lists() {
        let s = sel("i:2.7");
        assert!(s.wants_instance(2, 7));
        assert!(!s.wants_instance(2, 8) && !s.wants_instance(3, 7));
        assert!(!s.wants_gpu(2));
        assert!(s.touches(2) && !s.touches(3));
        assert_eq!(s.describe(), "no GPU-level series; MIG instance 2.7");

        let s = sel("i:2.7-9");
        assert!(!s.wants_instance(2, 6));
        assert!(s.wants_instance(2, 7) && s.wants_instance(2, 8) && s.wants_instance(2, 9));
        assert!(!s.wants_instance(2, 10));
        assert_eq!(s.describe(), "no GPU-level series; MIG instances 2.7-9");

        let s = sel("i:3");
        assert!(s.wants_instance(3, 0) && s.wants_instance(3, 255));
        assert!(!s.wants_instance(2, 0) && !s.wants_gpu(3));
        assert_eq!(
            s.describe(),
            "no GPU-level series; all MIG instances on GPU 3"
        );

        let s = sel("i:1-2");
        assert!(s.wants_instance(1, 4) && s.wants_instance(2, 4) && !s.wants_instance(3, 4));
        assert_eq!(
            s.describe(),
            "no GPU-level series; all MIG instances on GPUs 1,2"
        );

        assert_eq!(
            sel("i:0.0").describe(),
            "no GPU-level series; MIG instance 0.0"
        );
        assert!(sel("i:0.255").wants_instance(0, 255));
    }

    #[test]
    fn instance_ranges_are_normalised() {
        // Adjacent and overlapping ranges merge; ranges under a whole-GPU item vanish.
        assert_eq!(sel("i:1.1-3,1.4,1.2-6"), sel("i:1.1-6"));
        assert_eq!(sel("i:1.3,1.1"), sel("i:1.1,1.3"));
        assert_eq!(sel("i:2.1,2,2.9"), sel("i:2"));
        assert_eq!(sel("i:2.1,i"), sel("i"));
        assert_eq!(
            sel("i:1.1,1.3").describe(),
            "no GPU-level series; MIG instances 1.1, 1.3"
        );
    }

    #[test]
    fn several_specs_at_once() {
        let s = sel("g:0,1,i:2.7-9,3");
        assert_eq!(gpus_of(&s), [0, 1]);
        assert!(s.wants_instance(2, 8) && !s.wants_instance(2, 1));
        assert!(s.wants_instance(3, 1) && s.wants_instance(3, 13));
        assert!(!s.wants_instance(0, 1) && !s.wants_instance(1, 1));
        assert_eq!(s.describe(), "GPUs 0,1; MIG instances 2.7-9, all on GPU 3");
        for g in [0, 1, 2, 3] {
            assert!(s.touches(g), "{g}");
        }
        assert!(!s.touches(4));

        // The same thing in other spellings.
        for v in [
            "g:0,1;i:2.7-9,3",
            "g:0,1 i:2.7-9,3",
            "g:0, 1 ; i:2.7-9 , 3",
            "\tg:0,1\n\ni:3,2.7-9  ",
            "i:3,g:0,i:2.7-8,g:1,i:2.9",
            "g:0;g:1;i:2.7;i:2.8-9;i:3",
        ] {
            assert_eq!(sel(v), s, "{v:?}");
        }

        let s = sel("g,i:0.1");
        assert!(s.wants_gpu(40) && s.wants_instance(0, 1) && !s.wants_instance(0, 2));
        assert_eq!(s.describe(), "all GPUs; MIG instance 0.1");
        let s = sel("g:4,i");
        assert_eq!(s.describe(), "GPU 4; all MIG instances");
    }

    #[test]
    fn wants_table() {
        // (value, gpu, gi, wants_gpu, wants_instance, touches)
        let cases: &[(&str, u32, u32, bool, bool, bool)] = &[
            ("f", 0, 0, true, true, true),
            ("f", 63, 14, true, true, true),
            ("g", 5, 1, true, false, true),
            ("i", 5, 1, false, true, true),
            ("g:0,2-4", 0, 1, true, false, true),
            ("g:0,2-4", 1, 1, false, false, false),
            ("g:0,2-4", 4, 1, true, false, true),
            ("g:0,2-4", 5, 1, false, false, false),
            ("g:0,2-4", 64, 1, false, false, false),
            ("i:1", 1, 0, false, true, true),
            ("i:1", 0, 0, false, false, false),
            ("i:1-3", 3, 9, false, true, true),
            ("i:1-3", 4, 9, false, false, false),
            ("i:1.2", 1, 2, false, true, true),
            ("i:1.2", 1, 3, false, false, true),
            ("i:1.2-4", 1, 4, false, true, true),
            ("i:1.2-4", 1, 5, false, false, true),
            ("i:1.2-4", 2, 3, false, false, false),
            ("g:1,i:1.2", 1, 2, true, true, true),
            ("g:1,i:1.2", 1, 9, true, false, true),
            ("g:0,1,i:2.7-9,3", 2, 7, false, true, true),
            ("g:0,1,i:2.7-9,3", 2, 10, false, false, true),
            ("g:0,1,i:2.7-9,3", 3, 0, false, true, true),
            ("g:0,1,i:2.7-9,3", 1, 7, true, false, true),
            ("g:0,1,i:2.7-9,3", 9, 7, false, false, false),
            ("i:63.255", 63, 255, false, true, true),
            ("i:63.255", 64, 255, false, false, false),
        ];
        for &(v, gpu, gi, g, i, t) in cases {
            let s = sel(v);
            assert_eq!(s.wants_gpu(gpu), g, "{v:?} wants_gpu({gpu})");
            assert_eq!(
                s.wants_instance(gpu, gi),
                i,
                "{v:?} wants_instance({gpu}, {gi})"
            );
            assert_eq!(s.touches(gpu), t, "{v:?} touches({gpu})");
        }
    }
}
