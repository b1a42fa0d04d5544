//! Device IDs from the kubelet pod-resources API → [`ParsedId`], and which resource names are
//! NVIDIA GPU resources ([`is_gpu_resource`]).
//!
//! The kubelet reports, for each container, the resource name and the device IDs that a device
//! plugin handed out (`ContainerDevices.resource_name` and `.device_ids`). The IDs are the
//! plugin's own strings; the forms in use on GPU nodes are:
//!
//! | ID | Source | Parsed as |
//! |---|---|---|
//! | `GPU-<uuid>` | NVIDIA device plugin, a whole GPU | [`DeviceRef::GpuUuid`] |
//! | `MIG-<uuid>` | NVIDIA device plugin, a MIG device (R470 and later drivers) | [`DeviceRef::MigUuid`] |
//! | `MIG-GPU-<uuid>/<gi>/<ci>` | NVIDIA device plugin, a MIG device (R450/R460 drivers) | [`DeviceRef::MigLegacy`] |
//! | `nvidia<N>`, `nvidia<N>/vgpu<K>` | GKE device plugin, a GPU (shared: share K) | [`DeviceRef::GpuIndex`] |
//! | `nvidia<N>/gi<M>`, `nvidia<N>/gi<M>/vgpu<K>` | GKE device plugin, a MIG partition | [`DeviceRef::MigIndex`] |
//! | `<any of the above>::<n>` | NVIDIA device plugin time-slicing / MPS, replica n | the same, `replica: Some(n)` |
//! | anything else | another plugin, or a malformed ID | [`DeviceRef::Other`] |
//!
//! Parsing is strict and total: it never panics, and an ID that does not match a form exactly
//! is [`DeviceRef::Other`] rather than a guess. Numbers are plain decimal (ASCII digits only,
//! no sign, no leading zero except `0` itself, at most `u32::MAX`); a UUID body is hex digits
//! and `-`, neither starting nor ending with `-`. Nothing is trimmed: a parsed ID can be written
//! back to the exact string it came from (the one lossy case: `nvidia<N>::<n>` and
//! `nvidia<N>/vgpu<n>` both give `replica: Some(n)`).
//!
//! This file is pure: no kubelet call, no NVML call, no allocation beyond the returned strings.

/// What one device ID from the kubelet (`ContainerDevices.device_ids`) refers to.
///
/// UUIDs are kept whole, prefix included (`GPU-…`, `MIG-…`), so that they compare directly with
/// what NVML returns for the device (and with the `UUID` label). Indices are kept as written; it
/// is the device-to-pod map that decides which NVML device they name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DeviceRef {
    /// `GPU-<uuid>`: a whole GPU by its NVML UUID. The NVIDIA device plugin's default ID for a
    /// full GPU (its `uuid` ID strategy). Holds the full string, `GPU-` included.
    GpuUuid(String),
    /// `MIG-<uuid>`: a MIG device by its own NVML UUID. Drivers from R470 on give every MIG
    /// device a UUID of this shape, and the NVIDIA device plugin advertises MIG devices by it.
    /// Holds the full string, `MIG-` included.
    MigUuid(String),
    /// `MIG-GPU-<uuid>/<gi>/<ci>`: a MIG device named by its parent GPU's UUID, its GPU instance
    /// id and its compute instance id. R450 and R460 drivers had no MIG UUIDs and named MIG
    /// devices this way; the NVIDIA device plugin passed that name on as the ID.
    MigLegacy {
        /// The parent GPU's NVML UUID, `GPU-` included (the leading `MIG-` is dropped).
        gpu_uuid: String,
        /// The GPU instance id (NVML's, as in the `GPU_I_ID` label).
        gpu_instance: u32,
        /// The compute instance id within that GPU instance.
        compute_instance: u32,
    },
    /// `nvidia<N>`: a whole GPU named after its device node `/dev/nvidia<N>`, as GKE's device
    /// plugin does. With GKE GPU time-sharing, each share of the GPU is `nvidia<N>/vgpu<K>`;
    /// that is the same GPU N, with K as [`ParsedId::replica`]. dcgm-exporter matches N against
    /// its `device` label (`--kubernetes-gpu-id-type device-name`).
    GpuIndex(u32),
    /// `nvidia<N>/gi<M>`: a MIG partition on GKE, GPU N's GPU instance M. Time-sharing a MIG
    /// partition on GKE adds a share, `nvidia<N>/gi<M>/vgpu<K>`, with K as
    /// [`ParsedId::replica`].
    MigIndex {
        /// The GPU number N from `nvidia<N>`.
        gpu: u32,
        /// The GPU instance id M from `gi<M>`.
        gpu_instance: u32,
    },
    /// Anything else, verbatim (less a well-formed `::<n>` suffix, which goes to
    /// [`ParsedId::replica`]): a custom plugin's ID, the NVIDIA device plugin's `index` ID
    /// strategy (`0`, `0:1`), or a malformed variant of the forms above. The map may still
    /// join it by exact string.
    Other(String),
}

/// One parsed device ID: the device it refers to and, when the device is shared, which share.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParsedId {
    /// The device the ID names.
    pub device: DeviceRef,
    /// The share of a shared device: the NVIDIA device plugin's time-slicing / MPS replica
    /// suffix `::<n>`, or GKE's time-sharing `vgpu<K>`. `None` for an unshared device.
    pub replica: Option<u32>,
}

/// Parses one device ID from the kubelet. Never fails: what matches no known form exactly is
/// [`DeviceRef::Other`].
///
/// A `::<n>` suffix (the NVIDIA device plugin's replica annotation, added to whatever ID the
/// device is advertised under) is split at the first `::` and applies to every form, `Other`
/// included. If what follows the first `::` is not a plain decimal, or nothing precedes it, the
/// whole ID is `Other` with no replica. An ID with both a GKE `vgpu<K>` and a `::<n>` has two
/// replicas and is `Other`.
pub fn parse_device_id(id: &str) -> ParsedId {
    let (base, replica) = match id.split_once("::") {
        None => (id, None),
        Some((base, suffix)) => match parse_decimal(suffix) {
            Some(n) if !base.is_empty() => (base, Some(n)),
            _ => return ParsedId::other(id, None),
        },
    };
    match parse_base(base) {
        None => ParsedId::other(base, replica),
        Some((device, None)) => ParsedId { device, replica },
        Some((device, Some(vgpu))) => match replica {
            None => ParsedId {
                device,
                replica: Some(vgpu),
            },
            Some(_) => ParsedId::other(id, None),
        },
    }
}

/// Whether a resource name is an NVIDIA GPU resource: `nvidia.com/gpu`, any `nvidia.com/mig-*`
/// (the NVIDIA device plugin's mixed MIG strategy, e.g. `nvidia.com/mig-1g.10gb`),
/// `nvidia.com/gpu.shared` and any other `nvidia.com/gpu.*` rename (the plugin's time-slicing
/// and MPS renames), plus every name in `extra` (from `--nvidia-resource-names`, compared
/// exactly).
///
/// The part after `nvidia.com/mig-` or `nvidia.com/gpu.` must be non-empty and hold no `/`.
/// Only a dot makes a rename: `nvidia.com/gpus` or `nvidia.com/gpu-a100` is not matched unless
/// listed in `extra`, since nothing says it is the plugin's GPU resource. dcgm-exporter matches
/// `nvidia.com/gpu.shared` only through `--nvidia-resource-names`; matching the `gpu.*` renames
/// by default is deliberate (dcgm-exporter issue #151: shared GPUs lost their pod labels).
pub fn is_gpu_resource(name: &str, extra: &[String]) -> bool {
    let builtin = name == GPU_RESOURCE
        || [MIG_RESOURCE_PREFIX, GPU_RENAME_PREFIX]
            .iter()
            .any(|prefix| name.strip_prefix(prefix).is_some_and(is_name_suffix));
    builtin || extra.iter().any(|e| e == name)
}

/// The NVIDIA device plugin's whole-GPU resource.
const GPU_RESOURCE: &str = "nvidia.com/gpu";

/// Prefix of the NVIDIA device plugin's per-profile MIG resources (`mig-1g.10gb`, …).
const MIG_RESOURCE_PREFIX: &str = "nvidia.com/mig-";

/// Prefix of the NVIDIA device plugin's renamed GPU resources (`gpu.shared`, …).
const GPU_RENAME_PREFIX: &str = "nvidia.com/gpu.";

/// The variable tail of a resource name: non-empty, one path segment.
fn is_name_suffix(s: &str) -> bool {
    !s.is_empty() && !s.contains('/')
}

impl ParsedId {
    fn other(s: &str, replica: Option<u32>) -> ParsedId {
        ParsedId {
            device: DeviceRef::Other(s.to_owned()),
            replica,
        }
    }
}

/// Parses an ID with any `::<n>` suffix already removed. Returns the device and, for the GKE
/// time-sharing forms, the `vgpu<K>` share; `None` when no form matches exactly.
fn parse_base(base: &str) -> Option<(DeviceRef, Option<u32>)> {
    if let Some(rest) = base.strip_prefix("MIG-") {
        if rest.starts_with("GPU-") {
            return parse_mig_legacy(rest).map(|d| (d, None));
        }
        return is_uuid_body(rest).then(|| (DeviceRef::MigUuid(base.to_owned()), None));
    }
    if let Some(rest) = base.strip_prefix("GPU-") {
        return is_uuid_body(rest).then(|| (DeviceRef::GpuUuid(base.to_owned()), None));
    }
    if let Some(rest) = base.strip_prefix("nvidia") {
        return parse_gke(rest);
    }
    None
}

/// `GPU-<uuid>/<gi>/<ci>` (after `MIG-`): exactly three `/`-separated parts.
fn parse_mig_legacy(rest: &str) -> Option<DeviceRef> {
    let mut parts = rest.split('/');
    let gpu_uuid = parts.next()?;
    let gpu_instance = parse_decimal(parts.next()?)?;
    let compute_instance = parse_decimal(parts.next()?)?;
    if parts.next().is_some() || !is_uuid_body(gpu_uuid.strip_prefix("GPU-")?) {
        return None;
    }
    Some(DeviceRef::MigLegacy {
        gpu_uuid: gpu_uuid.to_owned(),
        gpu_instance,
        compute_instance,
    })
}

/// The GKE forms after `nvidia`: `<N>`, `<N>/vgpu<K>`, `<N>/gi<M>`, `<N>/gi<M>/vgpu<K>`.
fn parse_gke(rest: &str) -> Option<(DeviceRef, Option<u32>)> {
    let mut parts = rest.split('/');
    let gpu = parse_decimal(parts.next()?)?;
    let (device, next) = match parts.next() {
        None => return Some((DeviceRef::GpuIndex(gpu), None)),
        Some(part) => match part.strip_prefix("gi") {
            Some(gi) => {
                let gpu_instance = parse_decimal(gi)?;
                (DeviceRef::MigIndex { gpu, gpu_instance }, parts.next())
            }
            None => (DeviceRef::GpuIndex(gpu), Some(part)),
        },
    };
    let vgpu = match next {
        None => None,
        Some(part) => Some(parse_decimal(part.strip_prefix("vgpu")?)?),
    };
    if parts.next().is_some() {
        return None;
    }
    Some((device, vgpu))
}

/// A plain decimal `u32`: ASCII digits only, no sign, no leading zero except `0` itself.
fn parse_decimal(s: &str) -> Option<u32> {
    let canonical = match s.as_bytes() {
        [] => false,
        [b'0'] => true,
        [b'0', ..] => false,
        bytes => bytes.iter().all(u8::is_ascii_digit),
    };
    if canonical { s.parse().ok() } else { None }
}

/// The body of an NVML UUID after `GPU-` / `MIG-`: hex digits and `-`, non-empty, neither
/// starting nor ending with `-`.
fn is_uuid_body(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && !s.ends_with('-')
        && s.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: &str = "GPU-5fd4e5f2-7e9a-5bd1-0b68-6a1d7b4c1f53";
    const MIG: &str = "MIG-7d5a3b4e-1c2d-5e6f-8a9b-0c1d2e3f4a5b";

    fn parsed(device: DeviceRef, replica: Option<u32>) -> ParsedId {
        ParsedId { device, replica }
    }

    fn other(s: &str) -> ParsedId {
        parsed(DeviceRef::Other(s.to_owned()), None)
    }

    /// The strings a parsed ID can have come from (two for a GKE index form with a replica).
    fn render(p: &ParsedId) -> Vec<String> {
        let suffix = |base: String| match p.replica {
            Some(n) => format!("{base}::{n}"),
            None => base,
        };
        match &p.device {
            DeviceRef::GpuUuid(u) | DeviceRef::MigUuid(u) | DeviceRef::Other(u) => {
                vec![suffix(u.clone())]
            }
            DeviceRef::MigLegacy {
                gpu_uuid,
                gpu_instance,
                compute_instance,
            } => vec![suffix(format!(
                "MIG-{gpu_uuid}/{gpu_instance}/{compute_instance}"
            ))],
            DeviceRef::GpuIndex(n) => gke(format!("nvidia{n}"), p.replica),
            DeviceRef::MigIndex { gpu, gpu_instance } => {
                gke(format!("nvidia{gpu}/gi{gpu_instance}"), p.replica)
            }
        }
    }

    fn gke(base: String, replica: Option<u32>) -> Vec<String> {
        match replica {
            Some(k) => vec![format!("{base}/vgpu{k}"), format!("{base}::{k}")],
            None => vec![base],
        }
    }

    #[test]
    fn gpu_uuid() {
        let want = parsed(DeviceRef::GpuUuid(UUID.to_owned()), None);
        assert_eq!(parse_device_id(UUID), want);
        assert_eq!(
            parse_device_id("GPU-1234abcd"),
            parsed(DeviceRef::GpuUuid("GPU-1234abcd".into()), None)
        );
        assert_eq!(
            parse_device_id(&format!("{UUID}::0")),
            parsed(DeviceRef::GpuUuid(UUID.to_owned()), Some(0))
        );
        assert_eq!(
            parse_device_id(&format!("{UUID}::17")),
            parsed(DeviceRef::GpuUuid(UUID.to_owned()), Some(17))
        );
        // Upper-case hex is still hex.
        assert_eq!(
            parse_device_id("GPU-ABCDEF01"),
            parsed(DeviceRef::GpuUuid("GPU-ABCDEF01".into()), None)
        );
    }

    #[test]
    fn gpu_uuid_malformed() {
        for id in [
            "GPU-",
            "GPU--",
            "GPU--abc",
            "GPU-abc-",
            "GPU-xyz",
            "GPU-abc/0",
            "GPU-abc ",
            " GPU-abc",
            "GPU-ab:c",
            "gpu-abc",
            "GPU",
            "GPU-é",
        ] {
            assert_eq!(parse_device_id(id), other(id), "{id:?}");
        }
        for id in [
            "GPU-abc::x",
            "GPU-abc::",
            "GPU-abc::-1",
            "GPU-abc::+1",
            "GPU-abc::01",
        ] {
            assert_eq!(parse_device_id(id), other(id), "{id:?}");
        }
        // A well-formed replica on a malformed base: the suffix still comes off.
        assert_eq!(
            parse_device_id("GPU-::1"),
            parsed(DeviceRef::Other("GPU-".into()), Some(1))
        );
    }

    #[test]
    fn mig_uuid() {
        assert_eq!(
            parse_device_id(MIG),
            parsed(DeviceRef::MigUuid(MIG.to_owned()), None)
        );
        assert_eq!(
            parse_device_id(&format!("{MIG}::3")),
            parsed(DeviceRef::MigUuid(MIG.to_owned()), Some(3))
        );
    }

    #[test]
    fn mig_uuid_malformed() {
        for id in [
            "MIG-",
            "MIG--",
            "MIG-xyz",
            "MIG-abc/1",
            "MIG-abc/1/0",
            "MIG",
            "mig-abc",
        ] {
            assert_eq!(parse_device_id(id), other(id), "{id:?}");
        }
        let id = format!("{MIG}::three");
        assert_eq!(parse_device_id(&id), other(&id));
    }

    #[test]
    fn mig_legacy() {
        let id = format!("MIG-{UUID}/7/0");
        let want = DeviceRef::MigLegacy {
            gpu_uuid: UUID.to_owned(),
            gpu_instance: 7,
            compute_instance: 0,
        };
        assert_eq!(parse_device_id(&id), parsed(want.clone(), None));
        assert_eq!(parse_device_id(&format!("{id}::2")), parsed(want, Some(2)));
        assert_eq!(
            parse_device_id("MIG-GPU-a/0/4294967295"),
            parsed(
                DeviceRef::MigLegacy {
                    gpu_uuid: "GPU-a".into(),
                    gpu_instance: 0,
                    compute_instance: u32::MAX,
                },
                None
            )
        );
    }

    #[test]
    fn mig_legacy_malformed() {
        for id in [
            "MIG-GPU-x/1",
            "MIG-GPU-a/1",
            "MIG-GPU-a",
            "MIG-GPU-a/1/0/2",
            "MIG-GPU-a/1/0/",
            "MIG-GPU-a//0",
            "MIG-GPU-a/1/",
            "MIG-GPU-a/x/0",
            "MIG-GPU-a/1/x",
            "MIG-GPU-a/01/0",
            "MIG-GPU-a/1/4294967296",
            "MIG-GPU-/1/0",
            "MIG-GPU-x/1/0",
            "MIG-GPU-a /1/0",
            "MIG-GPU-a/ 1/0",
            "MIG-GPU-a/1/0 ",
        ] {
            assert_eq!(parse_device_id(id), other(id), "{id:?}");
        }
    }

    #[test]
    fn gke_gpu() {
        assert_eq!(
            parse_device_id("nvidia0"),
            parsed(DeviceRef::GpuIndex(0), None)
        );
        assert_eq!(
            parse_device_id("nvidia12"),
            parsed(DeviceRef::GpuIndex(12), None)
        );
        assert_eq!(
            parse_device_id("nvidia3/vgpu5"),
            parsed(DeviceRef::GpuIndex(3), Some(5))
        );
        // The NVIDIA suffix applies to every form.
        assert_eq!(
            parse_device_id("nvidia3::5"),
            parsed(DeviceRef::GpuIndex(3), Some(5))
        );
    }

    #[test]
    fn gke_mig() {
        let want = DeviceRef::MigIndex {
            gpu: 1,
            gpu_instance: 9,
        };
        assert_eq!(parse_device_id("nvidia1/gi9"), parsed(want.clone(), None));
        assert_eq!(
            parse_device_id("nvidia1/gi9/vgpu0"),
            parsed(want.clone(), Some(0))
        );
        assert_eq!(parse_device_id("nvidia1/gi9::4"), parsed(want, Some(4)));
    }

    #[test]
    fn gke_malformed() {
        for id in [
            "nvidia",
            "nvidia/gi1",
            "nvidia0/gix",
            "nvidia0/gi",
            "nvidia0/gi1/vgpu",
            "nvidia0/gi1/vgpux",
            "nvidia0/vgpu",
            "nvidia0/vgpu1/gi1",
            "nvidia0/gi1/vgpu1/",
            "nvidia0/gi1/vgpu1/x",
            "nvidia0/",
            "nvidia0//gi1",
            "nvidia0/gi1/",
            "nvidia0/x",
            "nvidia01",
            "nvidia0/gi01",
            "nvidia0/vgpu01",
            "nvidia+1",
            "nvidia-1",
            "nvidia4294967296",
            "nvidia0/gi4294967296",
            "nvidiactl",
            "nvidia-uvm",
            "Nvidia0",
            "nvidia 0",
            "nvidia0 ",
        ] {
            assert_eq!(parse_device_id(id), other(id), "{id:?}");
        }
        // Two replicas (GKE share and NVIDIA suffix): not a known form.
        for id in ["nvidia0/vgpu1::2", "nvidia0/gi1/vgpu1::2"] {
            assert_eq!(parse_device_id(id), other(id), "{id:?}");
        }
        assert_eq!(
            parse_device_id("nvidia4294967295"),
            parsed(DeviceRef::GpuIndex(u32::MAX), None)
        );
    }

    #[test]
    fn other_forms() {
        assert_eq!(parse_device_id(""), other(""));
        assert_eq!(parse_device_id("::"), other("::"));
        assert_eq!(parse_device_id("::3"), other("::3"));
        assert_eq!(parse_device_id(":::3"), other(":::3"));
        assert_eq!(parse_device_id("a::1::2"), other("a::1::2"));
        assert_eq!(parse_device_id("/"), other("/"));
        assert_eq!(parse_device_id("0"), other("0"));
        assert_eq!(parse_device_id("0:1"), other("0:1"));
        assert_eq!(
            parse_device_id("0::1"),
            parsed(DeviceRef::Other("0".into()), Some(1))
        );
        assert_eq!(
            parse_device_id("example.com/dev-7::2"),
            parsed(DeviceRef::Other("example.com/dev-7".into()), Some(2))
        );
        assert_eq!(parse_device_id("x::4294967296"), other("x::4294967296"));
        assert_eq!(
            parse_device_id("x::4294967295"),
            parsed(DeviceRef::Other("x".into()), Some(u32::MAX))
        );
    }

    /// Every short combination of awkward fragments: no panic, and nothing trimmed (the parsed
    /// value writes back to the input).
    #[test]
    fn total_and_lossless() {
        const FRAGMENTS: [&str; 18] = [
            "",
            "GPU-",
            "MIG-",
            "nvidia",
            "0",
            "1",
            "01",
            "4294967296",
            "/",
            "gi",
            "vgpu",
            "::",
            ":",
            "a",
            "-",
            "x",
            " ",
            "é",
        ];
        let mut count = 0;
        for a in FRAGMENTS {
            for b in FRAGMENTS {
                for c in FRAGMENTS {
                    for d in FRAGMENTS {
                        let id = format!("{a}{b}{c}{d}");
                        let p = parse_device_id(&id);
                        assert!(render(&p).contains(&id), "{id:?} -> {p:?}");
                        count += 1;
                    }
                }
            }
        }
        assert_eq!(count, FRAGMENTS.len().pow(4));
    }

    #[test]
    fn gpu_resources() {
        let none: &[String] = &[];
        assert!(is_gpu_resource("nvidia.com/gpu", none));
        assert!(is_gpu_resource("nvidia.com/mig-1g.10gb", none));
        assert!(is_gpu_resource("nvidia.com/mig-3g.40gb", none));
        assert!(is_gpu_resource("nvidia.com/gpu.shared", none));
        assert!(is_gpu_resource("nvidia.com/gpu.a100", none));
    }

    #[test]
    fn not_gpu_resources() {
        let none: &[String] = &[];
        for name in [
            "",
            "amd.com/gpu",
            "example.com/foo",
            "nvidia.com/gpus",
            "nvidia.com/gpu-a100",
            "nvidia.com/gpu.",
            "nvidia.com/mig-",
            "nvidia.com/mig-1g.10gb/x",
            "nvidia.com/gpu.shared/x",
            "nvidia.com/GPU",
            "nvidia.com/a100",
            "nvidia.com/",
            "nvidia.com",
            " nvidia.com/gpu",
            "nvidia.com/gpu ",
            "gpu",
        ] {
            assert!(!is_gpu_resource(name, none), "{name:?}");
        }
    }

    #[test]
    fn extra_resource_names() {
        let extra = vec!["nvidia.com/a100".to_owned(), "example.com/foo".to_owned()];
        assert!(is_gpu_resource("nvidia.com/a100", &extra));
        assert!(is_gpu_resource("example.com/foo", &extra));
        assert!(!is_gpu_resource("nvidia.com/a100", &[]));
        // Compared exactly: no prefix, case or whitespace folding.
        assert!(!is_gpu_resource("nvidia.com/a10", &extra));
        assert!(!is_gpu_resource("nvidia.com/A100", &extra));
        assert!(!is_gpu_resource("nvidia.com/a100 ", &extra));
        // The built-in names hold whatever `extra` says.
        assert!(is_gpu_resource("nvidia.com/gpu", &extra));
    }
}
