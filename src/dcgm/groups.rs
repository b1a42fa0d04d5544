//! Which of the wanted profiling fields one GPU can watch together, from the metric groups
//! `dcgmProfGetSupportedMetricGroups` lists for it: groups that share a major id are exclusive
//! (DCGM watches one of them at a time), groups of different major ids combine.
//!
//! Pure computation on plain data; it must not call DCGM or log.

use std::collections::BTreeMap;

/// One profiling metric group of a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricGroup {
    /// Groups with the same major id cannot be watched together.
    pub major: u16,
    /// The group within its major id.
    pub minor: u16,
    /// The DCGM field ids it serves.
    pub fields: Vec<u16>,
}

/// The outcome for one GPU: the fields it watches, and why each other one is left out.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// Fields to watch, in the order wanted.
    pub watch: Vec<u16>,
    /// Fields left out, each with the reason in words.
    pub refused: Vec<(u16, String)>,
}

/// Picks, for each wanted field in order, a metric group: the group already chosen for its
/// major id when that one has the field, else (when its major id is still free) the group with
/// the field that serves the most wanted fields. A field no group has, or whose major id is
/// taken by a group without it, is refused with the reason.
pub fn resolve(wanted: &[u16], groups: &[MetricGroup]) -> Resolution {
    let mut chosen: BTreeMap<u16, &MetricGroup> = BTreeMap::new();
    let mut out = Resolution::default();
    let served = |g: &MetricGroup| wanted.iter().filter(|f| g.fields.contains(f)).count();
    for &field in wanted {
        if out.watch.contains(&field) {
            continue;
        }
        let with: Vec<&MetricGroup> = groups
            .iter()
            .filter(|g| g.fields.contains(&field))
            .collect();
        if with.is_empty() {
            out.refused.push((
                field,
                "DCGM lists no profiling metric group with this field for this GPU".to_owned(),
            ));
            continue;
        }
        if with
            .iter()
            .any(|g| chosen.get(&g.major).is_some_and(|c| *c == *g))
        {
            out.watch.push(field);
            continue;
        }
        let free: Vec<&&MetricGroup> = with
            .iter()
            .filter(|g| !chosen.contains_key(&g.major))
            .collect();
        match free
            .iter()
            .max_by_key(|g| (served(g), std::cmp::Reverse(g.minor)))
        {
            Some(g) => {
                chosen.insert(g.major, g);
                out.watch.push(field);
            }
            None => {
                let taken: Vec<String> = with
                    .iter()
                    .filter_map(|g| chosen.get(&g.major))
                    .map(|g| {
                        let others: Vec<String> = out
                            .watch
                            .iter()
                            .filter(|f| g.fields.contains(f))
                            .map(u16::to_string)
                            .collect();
                        format!(
                            "metric group {}.{} (fields {})",
                            g.major,
                            g.minor,
                            others.join(", ")
                        )
                    })
                    .collect();
                out.refused.push((
                    field,
                    format!(
                        "DCGM cannot watch it together with {} (metric groups of one major id \
                         are exclusive; DCGM_ST_PROFILING_MULTI_PASS)",
                        taken.join(" and ")
                    ),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(major: u16, minor: u16, fields: &[u16]) -> MetricGroup {
        MetricGroup {
            major,
            minor,
            fields: fields.to_vec(),
        }
    }

    #[test]
    fn groups_of_different_major_ids_combine() {
        let groups = [g(1, 0, &[1001, 1002, 1003]), g(2, 0, &[1009, 1010])];
        let r = resolve(&[1001, 1009, 1003], &groups);
        assert_eq!(r.watch, vec![1001, 1009, 1003]);
        assert!(r.refused.is_empty());
    }

    #[test]
    fn the_same_major_id_is_exclusive_and_the_refusal_says_why() {
        // As on a Turing GPU: tensor and the FP pipes in different minor groups of major 0.
        let groups = [
            g(0, 0, &[1001, 1002, 1004]),
            g(0, 1, &[1001, 1002, 1006]),
            g(1, 0, &[1005]),
        ];
        let r = resolve(&[1001, 1004, 1006, 1005], &groups);
        assert_eq!(r.watch, vec![1001, 1004, 1005]);
        assert_eq!(r.refused.len(), 1);
        assert_eq!(r.refused[0].0, 1006);
        assert!(
            r.refused[0].1.contains("metric group 0.0"),
            "{}",
            r.refused[0].1
        );
        assert!(r.refused[0].1.contains("MULTI_PASS"), "{}", r.refused[0].1);
    }

    #[test]
    fn the_group_serving_most_wanted_fields_wins_its_major_id() {
        let groups = [g(0, 0, &[1001]), g(0, 1, &[1001, 1002, 1003])];
        let r = resolve(&[1001, 1002, 1003], &groups);
        assert_eq!(r.watch, vec![1001, 1002, 1003]);
    }

    #[test]
    fn a_field_in_no_group_is_refused() {
        let r = resolve(&[1011], &[g(1, 0, &[1001])]);
        assert!(r.watch.is_empty());
        assert!(r.refused[0].1.contains("no profiling metric group"));
        let r = resolve(&[1001, 1001], &[g(1, 0, &[1001])]);
        assert_eq!(r.watch, vec![1001]);
    }
}
