//! Pod labels as Prometheus labels: name sanitizing, the allow-list, and collision rules.
//!
//! dcgm-exporter copies pod labels onto the series of the pod's GPUs when
//! `--kubernetes-enable-pod-labels` is set, filtered by `--kubernetes-pod-label-allowlist-regex`
//! (a comma-separated list of regexes) and with every character outside `[a-zA-Z0-9_]`
//! replaced by `_`. Up to 4.8.2 it drops a pod label named like the pod, namespace and
//! container labels it writes, and checks no other name, so a pod label `device` produces a
//! duplicate label name and a broken scrape. Here a sanitized name that collides with one of
//! [`reserved`] gets the prefix `label_` (or is left out, as 4.8.2 does, for the names the
//! caller says), and two pod
//! labels that sanitize to the same name yield one label (the original key that sorts first),
//! or, in dcgm-exporter 4.8.3's manner, one label each, named `<name>_conflict1`, `_conflict2`,
//! … in key order.

use std::collections::BTreeMap;

use regex::Regex;

/// The flag the allow-list comes from, for error messages.
pub const ALLOWLIST_FLAG: &str = "--kubernetes-pod-label-allowlist-regex";

/// Prefix given to a sanitized pod-label name that collides with a [`reserved`] name.
pub const COLLISION_PREFIX: &str = "label_";

/// Whether a label name is one the exporter itself writes (or Prometheus attaches at scrape
/// time): the label table's names in both spellings (`catalogue::labels::reserved`). A pod
/// label whose sanitized name is one of these is written as `label_<name>`.
pub fn reserved(name: &str) -> bool {
    crate::catalogue::labels::reserved().any(|r| r == name)
}

/// Turns any string into a valid Prometheus label name: every character outside
/// `[a-zA-Z0-9_]` becomes `_`, a leading digit gets a `_` prefix, and the empty string
/// becomes `_`.
pub fn sanitize_label_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        out.push('_');
    }
    out.extend(name.chars().map(|c| {
        if c.is_ascii_alphanumeric() || c == '_' {
            c
        } else {
            '_'
        }
    }));
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// A `--kubernetes-pod-label-allowlist-regex` entry that does not compile.
#[derive(Debug, thiserror::Error)]
#[error("{}: invalid regex {regex:?}: {source}", ALLOWLIST_FLAG)]
pub struct AllowlistError {
    /// The entry as given (trimmed).
    pub regex: String,
    /// Why it does not compile.
    pub source: regex::Error,
}

/// Which pod labels may become series labels (`--kubernetes-pod-label-allowlist-regex`).
///
/// Each regex must match the whole original pod-label key (it is anchored), e.g.
/// `app\.kubernetes\.io/.*` allows every `app.kubernetes.io/` label. An empty list allows every
/// label, as in dcgm-exporter. It also says how a label that collides is renamed.
#[derive(Debug, Clone)]
pub struct LabelAllowlist {
    patterns: Vec<Regex>,
    /// Put before a sanitized name that collides with one of [`reserved`].
    collision_prefix: &'static str,
    /// Keys that end up with the same name each get `_conflictN` instead of the first
    /// winning.
    conflict_suffix: bool,
    /// Sanitized names for which a pod label is left out rather than renamed.
    dropped: Vec<&'static str>,
    /// The most pod labels one series may carry (`--max-labels-per-series` less the widest
    /// series without them); the first names in sorted order are kept, so a pod's series
    /// keep the same labels from tick to tick.
    max: Option<usize>,
}

impl Default for LabelAllowlist {
    fn default() -> Self {
        Self {
            patterns: Vec::new(),
            collision_prefix: COLLISION_PREFIX,
            conflict_suffix: false,
            dropped: Vec::new(),
            max: None,
        }
    }
}

impl LabelAllowlist {
    /// Parses the flag's value: regexes separated by commas (blank entries and the spaces
    /// around each entry are ignored). `None` or an empty value allows every label.
    ///
    /// The error names the flag, the regex that did not compile and why.
    pub fn parse(spec: Option<&str>) -> Result<Self, AllowlistError> {
        let mut patterns = Vec::new();
        for raw in spec.unwrap_or("").split(',') {
            let re = raw.trim();
            if re.is_empty() {
                continue;
            }
            let anchored = Regex::new(&format!("^(?:{re})$")).map_err(|source| AllowlistError {
                regex: re.to_owned(),
                source,
            })?;
            patterns.push(anchored);
        }
        Ok(Self {
            patterns,
            ..Self::default()
        })
    }

    /// Sets the prefix of a label that collides with one of the exporter's (default
    /// [`COLLISION_PREFIX`]; dcgm-exporter 4.8.3+ writes `pod_label_`).
    pub fn set_collision_prefix(&mut self, prefix: &'static str) {
        self.collision_prefix = prefix;
    }

    /// Keys whose names collide each keep a label named `<name>_conflictN` (N from 1, in key
    /// order), as dcgm-exporter 4.8.3+ writes them, instead of the first key winning.
    pub fn set_conflict_suffix(&mut self, on: bool) {
        self.conflict_suffix = on;
    }

    /// Pod labels whose sanitized name is one of `names` are left out instead of renamed, as
    /// dcgm-exporter 4.8.2 leaves out a pod label named like the `pod`, `namespace`,
    /// `container` (and `pod_uid`) labels it writes on the same series.
    pub fn set_dropped(&mut self, names: Vec<&'static str>) {
        self.dropped = names;
    }

    /// Keeps at most `n` pod labels per series (the room `--max-labels-per-series` leaves).
    pub fn set_max(&mut self, n: usize) {
        self.max = Some(n);
    }

    /// The most pod labels kept per series (`None`: no limit set).
    pub fn max(&self) -> Option<usize> {
        self.max
    }

    /// `true` when the pod-label `key` (the original key, before sanitizing) may be exported.
    pub fn allows(&self, key: &str) -> bool {
        self.patterns.is_empty() || self.patterns.iter().any(|re| re.is_match(key))
    }

    /// `true` when no regex was given (every label is allowed).
    pub fn allows_all(&self) -> bool {
        self.patterns.is_empty()
    }
}

/// The series labels for a pod's labels: the allowed keys, sanitized, sorted by the
/// sanitized name, without duplicate names.
///
/// - A sanitized name the allow-list drops (see [`LabelAllowlist::set_dropped`]) is left out.
/// - A sanitized name in [`reserved`] becomes `label_<name>` (pod label `pod` → `label_pod`).
/// - So does a name starting with `__`, which Prometheus reserves for internal use.
/// - When several keys end up with the same name (`app.kubernetes.io/name` and
///   `app_kubernetes_io/name`, or `pod` and `label_pod`), the key that sorts first wins and the
///   others are dropped.
pub fn pod_label_pairs(
    labels: &BTreeMap<String, String>,
    allow: &LabelAllowlist,
) -> Vec<(String, String)> {
    // Name → the values of the keys that claim it, in key order (the map iterates in key
    // order, so the first key to claim a name is the one that sorts first).
    let mut claims: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (key, value) in labels {
        if !allow.allows(key) {
            continue;
        }
        let mut name = sanitize_label_name(key);
        if allow.dropped.contains(&name.as_str()) {
            continue;
        }
        if reserved(&name) || name.starts_with("__") {
            name.insert_str(0, allow.collision_prefix);
        }
        claims.entry(name).or_default().push(value.as_str());
    }
    let mut out: BTreeMap<String, &str> = BTreeMap::new();
    for (name, values) in &claims {
        match values.as_slice() {
            [one] => {
                out.entry(name.clone()).or_insert(one);
            }
            [first, ..] if !allow.conflict_suffix => {
                out.entry(name.clone()).or_insert(first);
            }
            many => {
                for (n, v) in many.iter().enumerate() {
                    let renamed = format!("{name}_conflict{}", n + 1);
                    // A pod label already named like that keeps it.
                    if !claims.contains_key(&renamed) {
                        out.entry(renamed).or_insert(v);
                    }
                }
            }
        }
    }
    out.into_iter()
        .take(allow.max.unwrap_or(usize::MAX))
        .map(|(k, v)| (k, v.to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn sanitize_replaces_invalid_characters() {
        assert_eq!(
            sanitize_label_name("app.kubernetes.io/name"),
            "app_kubernetes_io_name"
        );
        assert_eq!(sanitize_label_name("team-a"), "team_a");
        assert_eq!(sanitize_label_name("already_ok_123"), "already_ok_123");
        assert_eq!(sanitize_label_name("ünïcode"), "_n_code");
        assert_eq!(sanitize_label_name("a b"), "a_b");
    }

    #[test]
    fn sanitize_prefixes_leading_digit_and_fills_empty() {
        assert_eq!(sanitize_label_name("9lives"), "_9lives");
        assert_eq!(sanitize_label_name("0"), "_0");
        assert_eq!(sanitize_label_name(""), "_");
        assert_eq!(sanitize_label_name("_x"), "_x");
        assert_eq!(sanitize_label_name("-"), "_");
    }

    #[test]
    fn allowlist_empty_allows_all() {
        for spec in [None, Some(""), Some(" , ,")] {
            let a = LabelAllowlist::parse(spec).unwrap();
            assert!(a.allows_all());
            assert!(a.allows("anything/at.all"));
        }
        assert!(LabelAllowlist::default().allows("x"));
    }

    #[test]
    fn allowlist_is_anchored_on_the_original_key() {
        let a = LabelAllowlist::parse(Some(r"app\.kubernetes\.io/.*, team")).unwrap();
        assert!(!a.allows_all());
        assert!(a.allows("app.kubernetes.io/name"));
        assert!(a.allows("team"));
        assert!(!a.allows("team-b"), "a partial match must not count");
        assert!(!a.allows("my-team"));
        assert!(
            !a.allows("app_kubernetes_io_name"),
            "matched against the original key"
        );
    }

    #[test]
    fn allowlist_alternation_is_anchored_as_a_whole() {
        let a = LabelAllowlist::parse(Some("a|b")).unwrap();
        assert!(a.allows("a"));
        assert!(a.allows("b"));
        assert!(!a.allows("ab"));
        assert!(!a.allows("xb"));
    }

    #[test]
    fn allowlist_error_names_flag_and_regex() {
        let err = LabelAllowlist::parse(Some("ok,(unclosed"))
            .unwrap_err()
            .to_string();
        assert!(err.contains(ALLOWLIST_FLAG), "{err}");
        assert!(err.contains("(unclosed"), "{err}");
    }

    #[test]
    fn pairs_are_filtered_sanitized_and_sorted() {
        let l = labels(&[
            ("zeta", "z"),
            ("app.kubernetes.io/name", "trainer"),
            ("secret", "s"),
            ("Alpha", "a"),
        ]);
        let allow = LabelAllowlist::parse(Some("zeta,app\\..*,Alpha")).unwrap();
        assert_eq!(
            pod_label_pairs(&l, &allow),
            pairs(&[
                ("Alpha", "a"),
                ("app_kubernetes_io_name", "trainer"),
                ("zeta", "z"),
            ])
        );
    }

    #[test]
    fn dcgm_4_8_3_prefix_is_pod_label() {
        let mut allow = LabelAllowlist::default();
        allow.set_collision_prefix("pod_label_");
        let got = pod_label_pairs(&labels(&[("pod", "p"), ("app", "a")]), &allow);
        assert_eq!(got, pairs(&[("app", "a"), ("pod_label_pod", "p")]));
    }

    #[test]
    fn reserved_names_get_a_prefix() {
        let l = labels(&[
            ("pod", "p"),
            ("namespace", "n"),
            ("UUID", "u"),
            ("job", "j"),
            ("__name__", "x"),
            ("pod-uid", "id"),
            ("__meta", "m"),
        ]);
        let got = pod_label_pairs(&l, &LabelAllowlist::default());
        assert_eq!(
            got,
            pairs(&[
                ("label_UUID", "u"),
                ("label___meta", "m"),
                ("label___name__", "x"),
                ("label_job", "j"),
                ("label_namespace", "n"),
                ("label_pod", "p"),
                ("label_pod_uid", "id"),
            ])
        );
        for (name, _) in &got {
            assert!(!reserved(&name), "{name}");
        }
    }

    #[test]
    fn colliding_keys_keep_the_first_original_key() {
        let l = labels(&[
            ("app_kubernetes_io/name", "second"),
            ("app.kubernetes.io/name", "first"),
        ]);
        // '.' (0x2e) sorts before '_' (0x5f).
        assert_eq!(
            pod_label_pairs(&l, &LabelAllowlist::default()),
            pairs(&[("app_kubernetes_io_name", "first")])
        );
    }

    #[test]
    fn prefixed_reserved_name_does_not_duplicate_an_existing_label() {
        // `label_pod` sorts before `pod`, so it keeps the name; `pod` → `label_pod` is dropped.
        let l = labels(&[("pod", "from-pod"), ("label_pod", "from-label_pod")]);
        assert_eq!(
            pod_label_pairs(&l, &LabelAllowlist::default()),
            pairs(&[("label_pod", "from-label_pod")])
        );
    }

    #[test]
    fn dcgm_4_8_3_keeps_every_colliding_key_with_a_conflict_suffix() {
        let mut allow = LabelAllowlist::default();
        allow.set_conflict_suffix(true);
        let l = labels(&[
            ("app_kubernetes_io/name", "second"),
            ("app.kubernetes.io/name", "first"),
            ("solo", "s"),
        ]);
        assert_eq!(
            pod_label_pairs(&l, &allow),
            pairs(&[
                ("app_kubernetes_io_name_conflict1", "first"),
                ("app_kubernetes_io_name_conflict2", "second"),
                ("solo", "s"),
            ])
        );
        // A pod label already called `x_conflict1` keeps its name and value.
        let l = labels(&[("x.y", "1"), ("x/y", "2"), ("x_y_conflict1", "3")]);
        let got = pod_label_pairs(&l, &allow);
        assert!(
            got.contains(&("x_y_conflict1".to_owned(), "3".to_owned())),
            "{got:?}"
        );
        assert!(
            got.contains(&("x_y_conflict2".to_owned(), "2".to_owned())),
            "{got:?}"
        );
    }

    #[test]
    fn no_duplicate_names_ever() {
        let l = labels(&[
            ("a.b", "1"),
            ("a-b", "2"),
            ("a/b", "3"),
            ("a_b", "4"),
            ("1x", "5"),
            ("_1x", "6"),
            ("gpu", "7"),
            ("label_gpu", "8"),
        ]);
        let got = pod_label_pairs(&l, &LabelAllowlist::default());
        let mut names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "{got:?}");
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        // '-' < '.' < '/' < '_': "a-b" wins the name a_b; "1x" < "_1x" wins _1x.
        assert!(got.contains(&("a_b".to_owned(), "2".to_owned())), "{got:?}");
        assert!(got.contains(&("_1x".to_owned(), "5".to_owned())), "{got:?}");
        assert!(
            got.contains(&("label_gpu".to_owned(), "7".to_owned())),
            "{got:?}"
        );
    }
}
