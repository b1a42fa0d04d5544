//! PID → pod UID and container ID, through `<proc_root>/<pid>/cgroup`.
//!
//! NVML lists the host PIDs of the processes on each GPU. The kubelet puts every pod in a cgroup
//! of its own, named after the pod UID, and the container runtime puts each container in a child
//! of it named after the container ID; so the cgroup path of a process tells its pod and
//! container. The shapes in use:
//!
//! | cgroup driver, runtime | path (after any prefix) |
//! |---|---|
//! | cgroupfs, containerd / docker | `kubepods[/burstable\|/besteffort]/pod<uid>/<cid>` |
//! | cgroupfs, CRI-O | `kubepods[/…]/pod<uid>/crio-<cid>` |
//! | systemd, containerd | `kubepods.slice[/kubepods-<qos>.slice]/kubepods[-<qos>]-pod<uid_>.slice/cri-containerd-<cid>.scope` |
//! | systemd, CRI-O | `…-pod<uid_>.slice/crio-<cid>.scope` (`crio-conmon-<cid>.scope`: CRI-O's monitor) |
//! | systemd, docker | `…-pod<uid_>.slice/docker-<cid>.scope` |
//! | systemd-style path on cgroupfs | `…/kubepods-<qos>-pod<uid_>.slice:cri-containerd:<cid>` (also `:crio:`, `:docker:`) |
//!
//! `<uid_>` is the pod UID with `_` for `-` (systemd unit names); UIDs are returned with dashes,
//! lowercase. Any prefix is allowed before the pod element (kind and k3s nest the node's
//! cgroups, e.g. `/system.slice/docker-<node>.scope/kubelet.slice/kubelet-kubepods.slice/…`),
//! as long as a `kubepods` element leads to it. A container ID is 64 hex digits and is returned
//! bare (no `containerd://` or `cri-o://` prefix, lowercase); anything else after the pod element
//! (CRI-O's `crio-conmon-…`, an unknown runtime's scope) leaves the container unknown.
//!
//! cgroup v1 files have one `N:controllers:/path` line per hierarchy; cgroup v2 has one
//! `0::/path`. The unified line and the `cpu`, `memory`, `pids` and `name=systemd` hierarchies
//! are tried first (the kubelet manages those), then the rest.
//!
//! It is called by `attribution` on the sampler thread, reads one small file per PID it has
//! not seen and caches the answer; it must not call NVML or the Kubernetes API.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The proc root on a host (or in a container with `hostPID: true`).
pub const DEFAULT_PROC_ROOT: &str = "/proc";

/// What a process's cgroup says about its pod and container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupIdentity {
    /// The pod's UID, with dashes, lowercase (as in the API's `metadata.uid`).
    pub pod_uid: String,
    /// The container's ID, bare 64-digit lowercase hex (no runtime prefix); `None` when the
    /// process sits at pod level or in a cgroup that is not a container's (CRI-O's conmon).
    pub container_id: Option<String>,
}

/// Parses the contents of a `/proc/<pid>/cgroup` file. `None` when no line places the process
/// in a pod (a host process, or a layout not recognised).
pub fn parse_cgroup(text: &str) -> Option<CgroupIdentity> {
    let lines: Vec<(&str, &str)> = text.lines().filter_map(split_line).collect();
    let preferred = lines.iter().filter(|(c, _)| is_preferred(c));
    let others = lines.iter().filter(|(c, _)| !is_preferred(c));
    preferred
        .chain(others)
        .find_map(|(_, path)| parse_path(path))
}

/// `N:controllers:/path` → (controllers, path). The path may itself hold colons.
fn split_line(line: &str) -> Option<(&str, &str)> {
    let mut parts = line.trim_end().splitn(3, ':');
    let _hierarchy = parts.next()?;
    let controllers = parts.next()?;
    let path = parts.next()?;
    Some((controllers, path))
}

/// The unified hierarchy (empty controller list) and the v1 hierarchies the kubelet manages.
fn is_preferred(controllers: &str) -> bool {
    controllers.is_empty()
        || controllers
            .split(',')
            .any(|c| matches!(c, "cpu" | "memory" | "pids" | "name=systemd"))
}

/// A cgroup path → the pod and container it names, if any.
fn parse_path(path: &str) -> Option<CgroupIdentity> {
    let elements: Vec<&str> = path.split('/').filter(|e| !e.is_empty()).collect();
    let mut seen_kubepods = false;
    for (i, element) in elements.iter().enumerate() {
        // `…-pod<uid>.slice:cri-containerd:<cid>`: the pod and the container in one element.
        let (head, colon_tail) = match element.split_once(':') {
            Some((head, tail)) => (head, Some(tail)),
            None => (*element, None),
        };
        seen_kubepods |= mentions_kubepods(head);
        if !seen_kubepods {
            continue;
        }
        let Some(pod_uid) = pod_uid_of(head) else {
            continue;
        };
        let container_id = match colon_tail {
            Some(tail) => colon_container(tail),
            None => elements.get(i + 1).and_then(|next| container_of(next)),
        };
        return Some(CgroupIdentity {
            pod_uid,
            container_id,
        });
    }
    None
}

/// Whether an element is (or ends in) a `kubepods` cgroup: `kubepods`, `kubepods.slice`,
/// `kubelet-kubepods.slice`, `kubepods-burstable.slice`, `kubepods-burstable-pod….slice`.
fn mentions_kubepods(element: &str) -> bool {
    let stem = element.strip_suffix(".slice").unwrap_or(element);
    stem.split('-').any(|part| part == "kubepods")
}

/// `pod<uid>` (cgroupfs) or `…-pod<uid_>.slice` (systemd) → the normalised UID.
fn pod_uid_of(element: &str) -> Option<String> {
    if let Some(stem) = element.strip_suffix(".slice") {
        let last = stem.rsplit('-').next()?;
        return normalise_uid(last.strip_prefix("pod")?);
    }
    normalise_uid(element.strip_prefix("pod")?)
}

/// A pod UID as found in a path → dashes, lowercase; `None` unless it is a UUID
/// (8-4-4-4-12 hex) or 32 hex digits (a static pod's config hash).
fn normalise_uid(raw: &str) -> Option<String> {
    let uid: String = raw
        .chars()
        .map(|c| {
            if c == '_' {
                '-'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    let groups: Vec<&str> = uid.split('-').collect();
    let lengths: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    let shape_ok = lengths == [8, 4, 4, 4, 12] || lengths == [32];
    let hex_ok = groups
        .iter()
        .all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()));
    (shape_ok && hex_ok).then_some(uid)
}

/// The element after the pod element → the container ID, if it names a container.
fn container_of(element: &str) -> Option<String> {
    let stem = element.strip_suffix(".scope").unwrap_or(element);
    if stem.starts_with("crio-conmon-") {
        return None;
    }
    let id = ["cri-containerd-", "crio-", "docker-"]
        .iter()
        .find_map(|prefix| stem.strip_prefix(prefix))
        .unwrap_or(stem);
    hex_id(id)
}

/// `cri-containerd:<cid>` (the part after the pod slice's colon) → the container ID.
fn colon_container(tail: &str) -> Option<String> {
    let (runtime, id) = tail.split_once(':')?;
    match runtime {
        "cri-containerd" | "crio" | "docker" => hex_id(id),
        _ => None,
    }
}

/// A 64-hex-digit container ID, lowercased; `None` for anything else.
fn hex_id(id: &str) -> Option<String> {
    (id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit())).then(|| id.to_ascii_lowercase())
}

/// Reads and caches identities under a proc root (default "/proc"; configurable for tests and
/// the simulator).
#[derive(Debug, Clone)]
pub struct ProcTree {
    root: PathBuf,
    cache: HashMap<u32, Option<CgroupIdentity>>,
    names: HashMap<u32, Option<String>>,
}

impl Default for ProcTree {
    fn default() -> Self {
        Self::new(DEFAULT_PROC_ROOT)
    }
}

impl ProcTree {
    /// A tree rooted at `root` (the directory holding `<pid>/cgroup`), with an empty cache.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            cache: HashMap::new(),
            names: HashMap::new(),
        }
    }

    /// The proc root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Identity of `pid`, cached across calls. `Ok(None)`: the process exists but is not in a
    /// pod (host process, or a cgroup we do not recognise). `Err`: the file could not be read
    /// (process gone, or the proc root does not show host PIDs); errors are not cached, so the
    /// next call tries again.
    pub fn lookup(&mut self, pid: u32) -> Result<Option<CgroupIdentity>, std::io::Error> {
        if let Some(identity) = self.cache.get(&pid) {
            return Ok(identity.clone());
        }
        let bytes = std::fs::read(self.root.join(pid.to_string()).join("cgroup"))?;
        let identity = parse_cgroup(&String::from_utf8_lossy(&bytes));
        self.cache.insert(pid, identity.clone());
        Ok(identity)
    }

    /// Drops cached entries for PIDs not in `live` (call once per tick with the PIDs NVML
    /// listed), so a reused PID is re-read.
    pub fn retain(&mut self, live: &HashSet<u32>) {
        self.cache.retain(|pid, _| live.contains(pid));
        self.names.retain(|pid, _| live.contains(pid));
    }

    /// The command name of `pid` (`<root>/<pid>/comm`, at most 64 bytes, control characters
    /// dropped), cached like [`ProcTree::lookup`]; `None` when it cannot be read.
    pub fn name(&mut self, pid: u32) -> Option<String> {
        if let Some(n) = self.names.get(&pid) {
            return n.clone();
        }
        let path = self.root.join(pid.to_string()).join("comm");
        let name = crate::base::bounded_read::read_regular(&path, 64)
            .ok()
            .map(|b| {
                String::from_utf8_lossy(&b)
                    .trim_end()
                    .chars()
                    .filter(|c| !c.is_control())
                    .collect::<String>()
            })
            .filter(|n| !n.is_empty());
        self.names.insert(pid, name.clone());
        name
    }

    /// Number of cached entries.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(uid: &str, cid: Option<&str>) -> Option<CgroupIdentity> {
        Some(CgroupIdentity {
            pod_uid: uid.to_string(),
            container_id: cid.map(str::to_string),
        })
    }

    #[test]
    fn fixtures() {
        let cases: &[(&str, &str, Option<CgroupIdentity>)] = &[
            (
                "v1-cgroupfs-containerd",
                include_str!("../../tests/fixtures/cgroup/v1-cgroupfs-containerd.txt"),
                id(
                    "8f1c2a3b-4d5e-4f60-9a7b-1c2d3e4f5a6b",
                    Some("3f1e2d4c5b6a79880f1e2d3c4b5a69788f9e0d1c2b3a49586f7e8d9c0b1a2f3e"),
                ),
            ),
            (
                "v1-systemd-docker",
                include_str!("../../tests/fixtures/cgroup/v1-systemd-docker.txt"),
                id(
                    "5a0b6c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d",
                    Some("a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"),
                ),
            ),
            (
                "v1-systemd-containerd-guaranteed",
                include_str!("../../tests/fixtures/cgroup/v1-systemd-containerd-guaranteed.txt"),
                id(
                    "0e9d8c7b-6a5f-4e3d-b2c1-0a9b8c7d6e5f",
                    Some("9c8b7a6f5e4d3c2b1a09f8e7d6c5b4a39c8b7a6f5e4d3c2b1a09f8e7d6c5b4a3"),
                ),
            ),
            (
                "v2-systemd-containerd",
                include_str!("../../tests/fixtures/cgroup/v2-systemd-containerd.txt"),
                id(
                    "d3c4b5a6-9788-4f1e-a2d3-c4b5a6978801",
                    Some("4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d"),
                ),
            ),
            (
                "v2-systemd-crio",
                include_str!("../../tests/fixtures/cgroup/v2-systemd-crio.txt"),
                id(
                    "7b6a5f4e-3d2c-4b1a-9f8e-7d6c5b4a3f2e",
                    Some("0718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6"),
                ),
            ),
            (
                "v2-systemd-crio-conmon",
                include_str!("../../tests/fixtures/cgroup/v2-systemd-crio-conmon.txt"),
                id("7b6a5f4e-3d2c-4b1a-9f8e-7d6c5b4a3f2e", None),
            ),
            (
                "v2-cgroupfs-containerd",
                include_str!("../../tests/fixtures/cgroup/v2-cgroupfs-containerd.txt"),
                id(
                    "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
                    Some("b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4"),
                ),
            ),
            (
                "v2-cgroupfs-crio",
                include_str!("../../tests/fixtures/cgroup/v2-cgroupfs-crio.txt"),
                id(
                    "6f5e4d3c-2b1a-4098-8f7e-6d5c4b3a2918",
                    Some("2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90a1b"),
                ),
            ),
            (
                "v2-host-process",
                include_str!("../../tests/fixtures/cgroup/v2-host-process.txt"),
                None,
            ),
            (
                "v2-kind-nested",
                include_str!("../../tests/fixtures/cgroup/v2-kind-nested.txt"),
                id(
                    "c0ffee00-1234-4abc-9def-0123456789ab",
                    Some("e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7"),
                ),
            ),
            (
                "v2-containerd-colon",
                include_str!("../../tests/fixtures/cgroup/v2-containerd-colon.txt"),
                id(
                    "4b3a2f1e-0d9c-4b8a-a796-857463524130",
                    Some("93a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f607182"),
                ),
            ),
            (
                "v2-pod-level",
                include_str!("../../tests/fixtures/cgroup/v2-pod-level.txt"),
                id("2d1c0b9a-8f7e-4d6c-b5a4-938271605f4e", None),
            ),
            (
                "v2-systemd-static-pod",
                include_str!("../../tests/fixtures/cgroup/v2-systemd-static-pod.txt"),
                id(
                    "6e0d3ba1b2a9f6e1c8d7b4a3f2e1d0c9",
                    Some("1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90a"),
                ),
            ),
        ];
        for (name, text, want) in cases {
            assert_eq!(&parse_cgroup(text), want, "fixture {name}");
        }
    }

    #[test]
    fn v1_files_have_all_controllers() {
        let text = include_str!("../../tests/fixtures/cgroup/v1-cgroupfs-containerd.txt");
        assert!(text.lines().count() >= 12);
    }

    const UID: &str = "8f1c2a3b-4d5e-4f60-9a7b-1c2d3e4f5a6b";
    const CID: &str = "3f1e2d4c5b6a79880f1e2d3c4b5a69788f9e0d1c2b3a49586f7e8d9c0b1a2f3e";

    #[test]
    fn non_pod_paths() {
        for text in [
            "0::/",
            "0::/user.slice/user-1000.slice/session-3.scope",
            "0::/system.slice/containerd.service",
            "0::/system.slice/kubelet.service",
            "",
            "garbage",
            // a pod-like element without a kubepods ancestor
            &format!("0::/machine.slice/pod{UID}/{CID}"),
            // a malformed UID
            "0::/kubepods/burstable/podnot-a-uid/abc",
            "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable.slice",
        ] {
            assert_eq!(parse_cgroup(text), None, "{text:?}");
        }
    }

    #[test]
    fn container_id_must_be_hex() {
        let text = format!("0::/kubepods/pod{UID}/not-a-container-id");
        assert_eq!(parse_cgroup(&text), id(UID, None));
        let short = format!("0::/kubepods/pod{UID}/{}", &CID[..12]);
        assert_eq!(parse_cgroup(&short), id(UID, None));
        let colon = format!(
            "0::/kubepods-pod{}.slice:cri-containerd:xyz",
            UID.replace('-', "_")
        );
        assert_eq!(parse_cgroup(&colon), id(UID, None));
    }

    #[test]
    fn uppercase_is_lowered() {
        let text = format!(
            "0::/kubepods/besteffort/pod{}/{}",
            UID.to_uppercase(),
            CID.to_uppercase()
        );
        assert_eq!(parse_cgroup(&text), id(UID, Some(CID)));
    }

    #[test]
    fn colon_forms() {
        let uid_ = UID.replace('-', "_");
        for runtime in ["cri-containerd", "crio", "docker"] {
            let text = format!("0::/kubepods-besteffort-pod{uid_}.slice:{runtime}:{CID}");
            assert_eq!(parse_cgroup(&text), id(UID, Some(CID)), "{runtime}");
        }
        let conmon = format!("0::/kubepods-besteffort-pod{uid_}.slice:crio-conmon:{CID}");
        assert_eq!(parse_cgroup(&conmon), id(UID, None));
    }

    #[test]
    fn cgroupfs_crio_conmon_and_subcgroup() {
        let conmon = format!("0::/kubepods/burstable/pod{UID}/crio-conmon-{CID}");
        assert_eq!(parse_cgroup(&conmon), id(UID, None));
        // crun's delegated `container` sub-cgroup below the container's scope.
        let nested = format!(
            "0::/kubepods.slice/kubepods-pod{}.slice/crio-{CID}.scope/container",
            UID.replace('-', "_")
        );
        assert_eq!(parse_cgroup(&nested), id(UID, Some(CID)));
    }

    #[test]
    fn preferred_line_wins_and_others_are_fallback() {
        // Only a non-preferred v1 hierarchy has the pod: still found.
        let text = format!("5:devices:/kubepods/pod{UID}/{CID}\n1:name=systemd:/\n0::/\n");
        assert_eq!(parse_cgroup(&text), id(UID, Some(CID)));
        // A preferred line is used before an earlier non-preferred one.
        let other = CID.replace('3', "4");
        let text = format!(
            "7:devices:/kubepods/pod{UID}/{other}\n3:cpu,cpuacct:/kubepods/pod{UID}/{CID}\n"
        );
        assert_eq!(parse_cgroup(&text), id(UID, Some(CID)));
    }

    fn write_cgroup(root: &Path, pid: u32, text: &str) {
        let dir = root.join(pid.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cgroup"), text).unwrap();
    }

    #[test]
    fn proc_tree_caches_until_retain_drops_the_pid() {
        let tmp = tempfile::tempdir().unwrap();
        let mut tree = ProcTree::new(tmp.path());
        assert_eq!(tree.root(), tmp.path());
        write_cgroup(tmp.path(), 42, &format!("0::/kubepods/pod{UID}/{CID}\n"));
        assert_eq!(tree.lookup(42).unwrap(), id(UID, Some(CID)));
        assert_eq!(tree.cached(), 1);

        // The PID is reused by a host process: still cached while NVML keeps listing it.
        write_cgroup(tmp.path(), 42, "0::/user.slice\n");
        tree.retain(&HashSet::from([42]));
        assert_eq!(tree.lookup(42).unwrap(), id(UID, Some(CID)));

        // Once a tick goes by without it, it is re-read.
        tree.retain(&HashSet::from([7]));
        assert_eq!(tree.cached(), 0);
        assert_eq!(tree.lookup(42).unwrap(), None);
        assert_eq!(tree.cached(), 1);
    }

    #[test]
    fn proc_tree_errors_are_not_cached() {
        let tmp = tempfile::tempdir().unwrap();
        let mut tree = ProcTree::new(tmp.path());
        assert!(tree.lookup(99).is_err());
        assert_eq!(tree.cached(), 0);
        write_cgroup(tmp.path(), 99, &format!("0::/kubepods/pod{UID}\n"));
        assert_eq!(tree.lookup(99).unwrap(), id(UID, None));
    }

    #[test]
    fn proc_tree_host_process() {
        let tmp = tempfile::tempdir().unwrap();
        let mut tree = ProcTree::new(tmp.path());
        write_cgroup(
            tmp.path(),
            1,
            include_str!("../../tests/fixtures/cgroup/v2-host-process.txt"),
        );
        assert_eq!(tree.lookup(1).unwrap(), None);
        assert_eq!(tree.cached(), 1);
    }

    #[test]
    fn default_root_is_proc() {
        assert_eq!(ProcTree::default().root(), Path::new("/proc"));
    }
}
