//! The scenario's pods over scenario time: which pods exist at a time (the `[[pods]]` between
//! their `start` and `end`, and the job pods of `[[jobs]]`), and the player that makes the
//! simulated kubelet, API server and proc tree follow the scenario clock. A pod appears in the
//! API server (`ADDED`) and its processes in the proc tree before the kubelet lists it, and
//! leaves the kubelet's list before it is deleted from the API server (`DELETED`), as on a
//! node: the API server knows a pod from its scheduling to its deletion.
//!
//! It must not resolve devices (`pods`) or serve requests (`kubelet`, `api`).

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::api::control::ApiPods;
use super::jobs::{JobError, JobStream};
use super::kubelet::KubeletViews;
use super::pods::{GpuInfo, PodError, RawPod, ResolvedPod, resolve_pod};
use crate::gpu::xid::Clock;
use crate::sources::kubelet::client::KubeletView;

/// How often the player looks at the scenario clock.
const POLL: Duration = Duration::from_millis(50);

/// Why the scenario's pods cannot be played.
#[derive(Debug, thiserror::Error)]
pub enum ChurnError {
    /// A pod does not resolve, or its `start`/`end` are not valid.
    #[error(transparent)]
    Pod(#[from] PodError),
    /// A job stream's device does not resolve.
    #[error(transparent)]
    Job(#[from] JobError),
}

/// One pod that exists at some time: a scenario pod, or round `k` of a stream's slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Live {
    Fixed(usize),
    Job {
        stream: usize,
        round: u64,
        slot: usize,
    },
}

/// A scenario pod with its time window.
struct Fixed {
    start: f64,
    end: Option<f64>,
    pod: ResolvedPod,
}

/// Every pod of the scenario over time.
pub struct Timeline {
    fixed: Vec<Fixed>,
    streams: Vec<JobStream>,
    gpus: Vec<GpuInfo>,
    node: String,
}

/// Checks a pod's `start` and `end`.
fn window(p: &RawPod) -> Result<(), PodError> {
    let bad = |problem: String| PodError::Invalid {
        pod: p.key(),
        problem,
    };
    if !p.start.is_finite() || p.start < 0.0 {
        return Err(bad(format!("start = {} is not a time >= 0", p.start)));
    }
    if let Some(e) = p.end
        && (!e.is_finite() || e <= p.start)
    {
        return Err(bad(format!("end = {e} is not after start = {}", p.start)));
    }
    Ok(())
}

impl Timeline {
    /// Resolves the scenario's pods against the node's `gpus`, and one round of every stream
    /// (so that a device the node lacks is an error now, naming the job and key).
    pub fn new(
        pods: &[RawPod],
        streams: Vec<JobStream>,
        gpus: Vec<GpuInfo>,
        node: &str,
    ) -> Result<Self, ChurnError> {
        let mut fixed = Vec::with_capacity(pods.len());
        for p in pods {
            window(p)?;
            fixed.push(Fixed {
                start: p.start,
                end: p.end,
                pod: resolve_pod(p, &gpus, node)?,
            });
        }
        for j in &streams {
            for s in 0..j.slots() {
                resolve_pod(&j.pod(0, s), &gpus, node).map_err(|e| match e {
                    PodError::Invalid { problem, .. } => ChurnError::Job(j.slot_error(s, problem)),
                    other => ChurnError::Pod(other),
                })?;
            }
        }
        Ok(Self {
            fixed,
            streams,
            gpus,
            node: node.to_owned(),
        })
    }

    /// Whether the same pods exist at every time (no window, no job): nothing to play.
    pub fn is_static(&self) -> bool {
        self.streams.is_empty() && self.fixed.iter().all(|f| f.start <= 0.0 && f.end.is_none())
    }

    /// The node's GPUs.
    pub fn gpus(&self) -> &[GpuInfo] {
        &self.gpus
    }

    /// Every (GPU index, resource) that some pod, at some time, holds a time-sliced replica of.
    pub fn shared_gpus(&self) -> Result<BTreeSet<(u32, String)>, ChurnError> {
        let mut out: BTreeSet<(u32, String)> = self
            .fixed
            .iter()
            .flat_map(|f| f.pod.shared.iter().cloned())
            .collect();
        for j in &self.streams {
            for s in 0..j.slots() {
                out.extend(resolve_pod(&j.pod(0, s), &self.gpus, &self.node)?.shared);
            }
        }
        Ok(out)
    }

    /// Every PID that a scenario pod's container owns, at any time.
    pub fn owned_pids(&self) -> HashSet<u32> {
        self.fixed
            .iter()
            .flat_map(|f| f.pod.cgroups.iter().map(|(p, _)| *p))
            .collect()
    }

    /// How many scenario pods there are (job pods not counted: they never end).
    pub fn fixed_pods(&self) -> usize {
        self.fixed.len()
    }

    fn live_at(&self, t: f64) -> Vec<Live> {
        let mut out: Vec<Live> = self
            .fixed
            .iter()
            .enumerate()
            .filter(|(_, f)| f.start <= t && f.end.is_none_or(|e| t < e))
            .map(|(i, _)| Live::Fixed(i))
            .collect();
        for (stream, j) in self.streams.iter().enumerate() {
            if let Some(round) = j.round_at(t) {
                out.extend((0..j.slots()).map(|slot| Live::Job {
                    stream,
                    round,
                    slot,
                }));
            }
        }
        out
    }

    fn resolve(&self, l: Live) -> Option<ResolvedPod> {
        match l {
            Live::Fixed(i) => self.fixed.get(i).map(|f| f.pod.clone()),
            Live::Job {
                stream,
                round,
                slot,
            } => {
                let j = self.streams.get(stream)?;
                // Every slot resolved in `new`, so this cannot fail.
                resolve_pod(&j.pod(round, slot), &self.gpus, &self.node).ok()
            }
        }
    }

    /// The pods that exist at scenario time `t`, in scenario order (pods, then each stream's
    /// slots).
    pub fn pods_at(&self, t: f64) -> Vec<ResolvedPod> {
        self.live_at(t)
            .into_iter()
            .filter_map(|l| self.resolve(l))
            .collect()
    }
}

/// Where the player puts the pods that exist: the kubelet's answer, the API server's pods and
/// the proc tree.
pub struct Stage {
    /// The simulated kubelet.
    pub kubelet: KubeletViews,
    /// The simulated API server's pods.
    pub api: ApiPods,
    /// The proc tree's root.
    pub proc_root: PathBuf,
    /// What `GetAllocatableResources` answers (the same at every time).
    pub allocatable: Option<Vec<(String, Vec<String>)>>,
}

/// What the stage shows now.
#[derive(Default)]
struct Shown {
    /// Whether anything was shown yet.
    started: bool,
    live: Vec<Live>,
    pods: Vec<ResolvedPod>,
}

fn write_cgroup(root: &Path, pid: u32, text: &str) -> std::io::Result<()> {
    let dir = root.join(pid.to_string());
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("cgroup"), text)?;
    std::fs::write(dir.join("comm"), "python3\n")
}

impl Stage {
    /// The kubelet's answer for `pods`.
    fn view(&self, pods: &[ResolvedPod]) -> KubeletView {
        KubeletView {
            pods: pods.iter().map(|p| p.devices.clone()).collect(),
            allocatable: self.allocatable.clone(),
        }
    }

    /// Moves the stage from `shown` to the pods of `timeline` at `t`.
    fn show(&self, timeline: &Timeline, shown: &mut Shown, t: f64) {
        let live = timeline.live_at(t);
        if shown.started && live == shown.live {
            return;
        }
        let pods: Vec<ResolvedPod> = live.iter().filter_map(|l| timeline.resolve(*l)).collect();
        let name = |p: &ResolvedPod| (p.devices.namespace.clone(), p.devices.name.clone());
        let before: HashSet<(String, String)> = shown.pods.iter().map(name).collect();
        let after: HashSet<(String, String)> = pods.iter().map(name).collect();
        for p in pods.iter().filter(|p| !before.contains(&name(p))) {
            self.api.apply(p.object.clone());
            for (pid, text) in &p.cgroups {
                if let Err(e) = write_cgroup(&self.proc_root, *pid, text) {
                    tracing::warn!(pid, "simulated proc tree: {e}");
                }
            }
        }
        self.kubelet.set(self.view(&pods));
        let kept_pids: HashSet<u32> = pods
            .iter()
            .flat_map(|p| p.cgroups.iter().map(|(pid, _)| *pid))
            .collect();
        for p in shown.pods.iter().filter(|p| !after.contains(&name(p))) {
            for (pid, _) in p.cgroups.iter().filter(|(pid, _)| !kept_pids.contains(pid)) {
                let _ = std::fs::remove_dir_all(self.proc_root.join(pid.to_string()));
            }
            self.api.delete(&p.devices.namespace, &p.devices.name);
        }
        tracing::debug!(t, pods = pods.len(), "simulated pods changed");
        *shown = Shown {
            started: true,
            live,
            pods,
        };
    }

    /// Shows the pods of scenario time `clock()` now and then follows the clock, on the
    /// current tokio runtime, until the API server is dropped. With a static timeline it only
    /// shows them.
    pub fn play(self, timeline: Timeline, clock: Option<Clock>) {
        let mut shown = Shown::default();
        let now = clock.as_ref().map_or(0.0, |c| c());
        self.show(&timeline, &mut shown, now);
        let Some(clock) = clock.filter(|_| !timeline.is_static()) else {
            return;
        };
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(POLL).await;
                if self.api.closed() {
                    return;
                }
                self.show(&timeline, &mut shown, clock());
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct T {
        #[serde(default)]
        pods: Vec<RawPod>,
        #[serde(default)]
        jobs: Vec<super::super::jobs::RawJob>,
    }

    fn timeline(text: &str) -> Result<Timeline, ChurnError> {
        let t: T = toml::from_str(text).unwrap();
        let gpus = (0..2)
            .map(|i| GpuInfo {
                uuid: format!("GPU-{i}"),
                migs: Default::default(),
                pids: Vec::new(),
            })
            .collect();
        let streams = super::super::jobs::parse(t.jobs)?;
        Timeline::new(&t.pods, streams, gpus, "n")
    }

    fn names(t: &Timeline, at: f64) -> Vec<String> {
        t.pods_at(at)
            .into_iter()
            .map(|p| format!("{}/{}", p.devices.namespace, p.devices.name))
            .collect()
    }

    #[test]
    fn pods_exist_between_start_and_end_and_jobs_by_round() {
        let t = timeline(
            "[[pods]]\nname = \"p\"\nstart = 2\nend = 5\n[[pods.containers]]\nname = \"c\"\n\
             gpus = [0]\npids = [7]\n\
             [[jobs]]\nname = \"ci\"\nevery = 4\nduration = 3\ngpus = [1]\nshared = [\"0::1\"]\n",
        )
        .unwrap();
        assert!(!t.is_static());
        assert_eq!(names(&t, 0.0), ["default/ci-0", "default/ci-1"]);
        assert_eq!(
            names(&t, 2.0),
            ["default/p", "default/ci-0", "default/ci-1"]
        );
        assert_eq!(names(&t, 3.5), ["default/p"]);
        assert_eq!(names(&t, 5.0), ["default/ci-2", "default/ci-3"]);
        assert_eq!(t.owned_pids(), HashSet::from([7]));
        assert_eq!(
            t.shared_gpus().unwrap(),
            BTreeSet::from([(0, "nvidia.com/gpu".to_string())])
        );
        let ci3 = &t.pods_at(5.0)[1];
        assert_eq!(ci3.devices.containers[0].devices[0].1, ["GPU-0::1"]);
        assert_eq!(
            ci3.object["metadata"]["ownerReferences"][0]["name"], "ci-3",
            "one Job per run by default"
        );
        let fixed = timeline("[[pods]]\nname = \"p\"\n").unwrap();
        assert!(fixed.is_static());
    }

    #[test]
    fn bad_windows_and_devices_name_the_pod_or_job_and_key() {
        for (text, want) in [
            (
                "[[pods]]\nname = \"job-3\"\nnamespace = \"ci\"\nstart = 9\nend = 5\n",
                "scenario pod ci/job-3: end = 5 is not after start = 9",
            ),
            (
                "[[pods]]\nname = \"p\"\nstart = -1\n",
                "scenario pod default/p: start = -1 is not a time >= 0",
            ),
            (
                "[[jobs]]\nname = \"ci\"\nnamespace = \"ci\"\nevery = 4\nduration = 3\n\
                 gpus = [9]\n",
                "scenario job ci/ci: gpus: no GPU 9 (the node has 2)",
            ),
            (
                "[[jobs]]\nname = \"ci\"\nevery = 4\nduration = 3\nmig = [\"1.7\"]\n",
                "scenario job default/ci: mig: mig \"1.7\": GPU 1 has no GPU instance 7",
            ),
        ] {
            let e = timeline(text).err().unwrap().to_string();
            assert_eq!(e, want, "{text}");
        }
    }
}
