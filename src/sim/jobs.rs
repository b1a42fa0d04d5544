//! The scenario's job generator (`[[jobs]]`): an endless stream of short-lived pods over
//! scenario time, as on a batch or CI node. Each slot (a whole GPU, a MIG instance or a
//! time-sliced replica) runs one job after another: round `k` of slot `s` starts at
//! `start + k * every`, runs for `duration`, and its pod is `<name>-<k * slots + s>`.
//!
//! It validates the table and says which job pods exist at a scenario time, as [`RawPod`]s;
//! it must not resolve devices or serve anything (`pods` and `churn` do).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::pods::{RawContainer, RawPod, default_namespace, parse_mig, parse_shared};

/// The longest `every` and `duration` (a day), and the latest `start` (a year): beyond them
/// the job numbers of a long run would lose precision.
const MAX_PERIOD_S: f64 = 86_400.0;
const MAX_START_S: f64 = 365.0 * 86_400.0;

/// One `[[jobs]]` table, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawJob {
    name: String,
    #[serde(default = "default_namespace")]
    namespace: String,
    every: f64,
    duration: f64,
    #[serde(default)]
    start: f64,
    #[serde(default)]
    gpus: Vec<u32>,
    #[serde(default)]
    mig: Vec<String>,
    #[serde(default)]
    shared: Vec<String>,
    #[serde(default = "default_container")]
    container: String,
    owner: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    resource: Option<String>,
}

fn default_container() -> String {
    "main".into()
}

/// Why a `[[jobs]]` table is not valid; names the job and the key.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// A value is out of range or malformed.
    #[error("scenario job {job}: {key}: {problem}")]
    Invalid {
        /// `namespace/name` of the job (or its place, `[[jobs]] #N`, without a usable name).
        job: String,
        /// The key at fault.
        key: &'static str,
        /// What is wrong with it.
        problem: String,
    },
}

/// One device a job stream's pods take in turn.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Slot {
    Gpu(u32),
    Mig(String),
    Shared(String),
}

impl Slot {
    /// The key it is listed under.
    fn key(&self) -> &'static str {
        match self {
            Slot::Gpu(_) => "gpus",
            Slot::Mig(_) => "mig",
            Slot::Shared(_) => "shared",
        }
    }

    /// As written in the scenario.
    fn shown(&self) -> String {
        match self {
            Slot::Gpu(g) => g.to_string(),
            Slot::Mig(m) | Slot::Shared(m) => format!("{m:?}"),
        }
    }
}

/// A validated job stream.
#[derive(Debug, Clone)]
pub struct JobStream {
    raw: RawJob,
    slots: Vec<Slot>,
}

/// Whether `s` is a DNS label as Kubernetes names pods: lowercase letters, digits and `-`,
/// starting and ending with a letter or digit, at most 63 characters.
fn dns_label(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Validates the scenario's `[[jobs]]`.
pub fn parse(raw: Vec<RawJob>) -> Result<Vec<JobStream>, JobError> {
    let mut out: Vec<JobStream> = Vec::with_capacity(raw.len());
    for (i, j) in raw.into_iter().enumerate() {
        let bad = |(key, problem): Problem| JobError::Invalid {
            job: j.shown(i),
            key,
            problem,
        };
        j.check_names(&out).map_err(bad)?;
        j.check_times().map_err(bad)?;
        j.check_pod().map_err(bad)?;
        let slots = j.slots().map_err(bad)?;
        out.push(JobStream { raw: j, slots });
    }
    Ok(out)
}

/// What is wrong with a `[[jobs]]` table: the key at fault and the problem.
type Problem = (&'static str, String);

impl RawJob {
    /// `namespace/name`, or the table's place (`[[jobs]] #N`, the `i`th from 0) without a
    /// name, for its errors.
    fn shown(&self, i: usize) -> String {
        if self.name.is_empty() {
            format!("[[jobs]] #{}", i + 1)
        } else {
            format!("{}/{}", self.namespace, self.name)
        }
    }

    /// The name (with room for `-<n>` in a 63-character pod name) and namespace are DNS
    /// labels, and no stream validated before (`earlier`) has both.
    fn check_names(&self, earlier: &[JobStream]) -> Result<(), Problem> {
        if !dns_label(&self.name, 50) {
            return Err((
                "name",
                format!(
                    "{:?} is not a name of 1 to 50 lowercase letters, digits and '-' \
                     (its pods are <name>-<n>)",
                    self.name
                ),
            ));
        }
        if !dns_label(&self.namespace, 63) {
            return Err((
                "namespace",
                format!("{:?} is not a Kubernetes namespace name", self.namespace),
            ));
        }
        if earlier
            .iter()
            .any(|o| o.raw.name == self.name && o.raw.namespace == self.namespace)
        {
            return Err(("name", "another [[jobs]] has the same name".into()));
        }
        Ok(())
    }

    /// `every` is a time up to [`MAX_PERIOD_S`], `duration` one no longer than `every` (a
    /// slot runs one job at a time), `start` one up to [`MAX_START_S`].
    fn check_times(&self) -> Result<(), Problem> {
        if !self.every.is_finite() || self.every <= 0.0 || self.every > MAX_PERIOD_S {
            return Err((
                "every",
                format!("{} is not a time > 0 and <= {MAX_PERIOD_S} s", self.every),
            ));
        }
        if !self.duration.is_finite() || self.duration <= 0.0 {
            return Err(("duration", format!("{} is not a time > 0", self.duration)));
        }
        if self.duration > self.every {
            return Err((
                "duration",
                format!(
                    "{} is longer than every = {}: a slot runs one job at a time",
                    self.duration, self.every
                ),
            ));
        }
        if !self.start.is_finite() || !(0.0..=MAX_START_S).contains(&self.start) {
            return Err((
                "start",
                format!("{} is not a time >= 0 and <= {MAX_START_S} s", self.start),
            ));
        }
        Ok(())
    }

    /// The pods' container name is not empty, and their owner, if any, is `Kind/name`.
    fn check_pod(&self) -> Result<(), Problem> {
        if self.container.is_empty() {
            return Err(("container", "must not be empty".into()));
        }
        if let Some(o) = &self.owner
            && o.split_once('/')
                .is_none_or(|(k, n)| k.is_empty() || n.is_empty())
        {
            return Err(("owner", format!("{o:?}: expected Kind/name")));
        }
        Ok(())
    }

    /// The slots, in the order written (`gpus`, then `mig`, then `shared`): at least one,
    /// each well formed and listed once.
    fn slots(&self) -> Result<Vec<Slot>, Problem> {
        let mut slots: Vec<Slot> = self.gpus.iter().map(|&g| Slot::Gpu(g)).collect();
        for m in &self.mig {
            if parse_mig(m).is_none() {
                return Err(("mig", format!("{m:?}: expected <gpu>.<gpu instance id>")));
            }
            slots.push(Slot::Mig(m.clone()));
        }
        for s in &self.shared {
            if parse_shared(s).is_none() {
                return Err(("shared", format!("{s:?}: expected <gpu>::<replica>")));
            }
            slots.push(Slot::Shared(s.clone()));
        }
        if slots.is_empty() {
            return Err((
                "gpus",
                "a job needs at least one slot in gpus, mig or shared".into(),
            ));
        }
        if let Some((a, _)) = slots
            .iter()
            .enumerate()
            .find(|(a, s)| slots[..*a].contains(s))
        {
            return Err((
                slots[a].key(),
                format!("{} is listed twice", slots[a].shown()),
            ));
        }
        Ok(slots)
    }
}

impl JobStream {
    /// `namespace/name` of the stream.
    pub fn key(&self) -> String {
        format!("{}/{}", self.raw.namespace, self.raw.name)
    }

    /// The error for slot `s`'s device, which the node does not have (`problem`).
    pub fn slot_error(&self, s: usize, problem: String) -> JobError {
        JobError::Invalid {
            job: self.key(),
            key: self.slots[s].key(),
            problem,
        }
    }

    /// How many slots the stream runs jobs on.
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// The round running at scenario time `t` (on every slot), if any.
    pub fn round_at(&self, t: f64) -> Option<u64> {
        let j = &self.raw;
        if !t.is_finite() || t < j.start {
            return None;
        }
        let mut k = ((t - j.start) / j.every).floor() as u64;
        // Float rounding must not start a round before its time.
        while k > 0 && self.round_start(k) > t {
            k -= 1;
        }
        (t < self.round_start(k) + j.duration).then_some(k)
    }

    /// When round `k` starts.
    pub fn round_start(&self, k: u64) -> f64 {
        self.raw.start + k as f64 * self.raw.every
    }

    /// The pod of round `k` on slot `s` (job number `k * slots + s`).
    pub fn pod(&self, k: u64, s: usize) -> RawPod {
        let j = &self.raw;
        let n = k * self.slots.len() as u64 + s as u64;
        let mut c = RawContainer {
            name: j.container.clone(),
            resource: j.resource.clone(),
            ..RawContainer::default()
        };
        match &self.slots[s] {
            Slot::Gpu(g) => c.gpus.push(*g),
            Slot::Mig(m) => c.mig.push(m.clone()),
            Slot::Shared(r) => c.shared.push(r.clone()),
        }
        let owner = j
            .owner
            .clone()
            .unwrap_or_else(|| format!("Job/{}-{{n}}", j.name))
            .replace("{n}", &n.to_string());
        let start = self.round_start(k);
        RawPod {
            name: format!("{}-{n}", j.name),
            namespace: j.namespace.clone(),
            owner: Some(owner),
            labels: j.labels.clone(),
            containers: vec![c],
            start,
            end: Some(start + j.duration),
        }
    }

    /// The pods running at scenario time `t`, in slot order.
    pub fn pods_at(&self, t: f64) -> Vec<RawPod> {
        match self.round_at(t) {
            Some(k) => (0..self.slots.len()).map(|s| self.pod(k, s)).collect(),
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs(text: &str) -> Result<Vec<JobStream>, JobError> {
        #[derive(Deserialize)]
        struct T {
            jobs: Vec<RawJob>,
        }
        parse(toml::from_str::<T>(text).unwrap().jobs)
    }

    #[test]
    fn rounds_follow_every_and_duration() {
        let j = jobs(
            "[[jobs]]\nname = \"ci\"\nnamespace = \"ci\"\nevery = 10\nduration = 8\nstart = 2\n\
             gpus = [0, 1]\nshared = [\"4::0\"]\n",
        )
        .unwrap();
        let j = &j[0];
        assert_eq!(j.slots(), 3);
        assert_eq!(j.round_at(1.9), None);
        assert_eq!(j.round_at(2.0), Some(0));
        assert_eq!(j.round_at(9.9), Some(0));
        assert_eq!(j.round_at(10.0), None, "ended at 2 + 8");
        assert_eq!(j.round_at(12.0), Some(1));
        let names: Vec<String> = j.pods_at(12.5).into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["ci-3", "ci-4", "ci-5"]);
        let p = j.pod(1, 2);
        assert_eq!((p.start, p.end), (12.0, Some(20.0)));
        assert_eq!(p.containers[0].shared, ["4::0"]);
        assert_eq!(p.owner.as_deref(), Some("Job/ci-5"));
        assert_eq!(j.round_at(2.0 + 10.0 * 100_000.0), Some(100_000));
    }

    #[test]
    fn duration_equal_to_every_leaves_no_gap_and_no_overlap() {
        let j = jobs("[[jobs]]\nname = \"b\"\nevery = 5\nduration = 5\nmig = [\"2.7\"]\n").unwrap();
        assert_eq!(j[0].round_at(4.999), Some(0));
        assert_eq!(j[0].round_at(5.0), Some(1));
        assert_eq!(j[0].pods_at(5.0)[0].name, "b-1");
    }

    #[test]
    fn an_owner_takes_the_job_number() {
        let j = jobs(
            "[[jobs]]\nname = \"ci\"\nevery = 5\nduration = 1\ngpus = [0]\nowner = \"Job/ci\"\n\
             [[jobs]]\nname = \"nightly\"\nevery = 5\nduration = 1\ngpus = [1]\n\
             owner = \"Job/nightly-{n}\"\n",
        )
        .unwrap();
        assert_eq!(j[0].pod(3, 0).owner.as_deref(), Some("Job/ci"));
        assert_eq!(j[1].pod(3, 0).owner.as_deref(), Some("Job/nightly-3"));
    }

    #[test]
    fn bad_tables_name_the_job_and_key() {
        let base = "every = 10\nduration = 8\ngpus = [0]\n";
        for (text, want) in [
            (
                format!("name = \"CI\"\n{base}"),
                "scenario job default/CI: name:",
            ),
            (
                "name = \"ci\"\nevery = 0\nduration = 1\ngpus = [0]\n".into(),
                "scenario job default/ci: every: 0 is not a time > 0",
            ),
            (
                "name = \"ci\"\nevery = 5\nduration = 8\ngpus = [0]\n".into(),
                "scenario job default/ci: duration: 8 is longer than every = 5",
            ),
            (
                "name = \"ci\"\nevery = 5\nduration = -1\ngpus = [0]\n".into(),
                "duration: -1 is not a time > 0",
            ),
            (format!("name = \"ci\"\nstart = -3\n{base}"), "start: -3"),
            (
                "name = \"ci\"\nevery = 5\nduration = 1\n".into(),
                "gpus: a job needs at least one slot",
            ),
            (
                "name = \"ci\"\nevery = 5\nduration = 1\nmig = [\"2-7\"]\n".into(),
                "mig: \"2-7\": expected <gpu>.<gpu instance id>",
            ),
            (
                "name = \"ci\"\nevery = 5\nduration = 1\nshared = [\"4\"]\n".into(),
                "shared: \"4\": expected <gpu>::<replica>",
            ),
            (
                "name = \"ci\"\nevery = 5\nduration = 1\ngpus = [1, 1]\n".into(),
                "gpus: 1 is listed twice",
            ),
            (
                format!("name = \"ci\"\nowner = \"Job\"\n{base}"),
                "owner: \"Job\": expected Kind/name",
            ),
            (
                format!("name = \"ci\"\ncontainer = \"\"\n{base}"),
                "container: must not be empty",
            ),
            (
                format!("name = \"ci\"\nnamespace = \"a b\"\n{base}"),
                "namespace: \"a b\"",
            ),
        ] {
            let e = jobs(&format!("[[jobs]]\n{text}")).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
        let e = jobs(&format!(
            "[[jobs]]\nname = \"a\"\n{base}[[jobs]]\nname = \"a\"\n{base}"
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("name: another [[jobs]] has the same name"),
            "{e}"
        );
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct T {
            jobs: Vec<RawJob>,
        }
        let e = toml::from_str::<T>(&format!("[[jobs]]\nname = \"a\"\nbogus = 1\n{base}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("bogus"), "{e}");
    }
}
