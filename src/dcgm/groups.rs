//! Which of the wanted profiling fields one GPU can watch together, from the metric groups
//! `dcgmProfGetSupportedMetricGroups` lists for it: groups of one major id need separate
//! hardware passes, which DCGM multiplexes up to [`MAX_PASSES`] per major id (more is
//! `DCGM_ST_PROFILING_MULTI_PASS`); groups of different major ids combine freely.
//!
//! Pure computation on plain data; it must not call DCGM or log.

use std::collections::BTreeMap;

/// How many metric groups of one major id DCGM's profiling module multiplexes on one GPU
/// (DCGM's own profiling tests watch five together and expect a sixth to be refused with
/// `DCGM_ST_PROFILING_MULTI_PASS`).
pub const MAX_PASSES: usize = 5;

/// One profiling metric group of a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricGroup {
    /// Groups with the same major id share hardware counters: each needs its own pass.
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

/// Picks, for each wanted field in order, a metric group: one already chosen when it has the
/// field, else, among the groups with the field whose major id has fewer than [`MAX_PASSES`]
/// groups chosen, the one that serves the most wanted fields. A field no group has, or whose
/// groups' major ids are full, is refused with the reason.
pub fn resolve(wanted: &[u16], groups: &[MetricGroup]) -> Resolution {
    let mut chosen: BTreeMap<u16, Vec<&MetricGroup>> = BTreeMap::new();
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
            .any(|g| chosen.get(&g.major).is_some_and(|c| c.contains(g)))
        {
            out.watch.push(field);
            continue;
        }
        let free = with
            .iter()
            .filter(|g| chosen.get(&g.major).map_or(0, Vec::len) < MAX_PASSES)
            .max_by_key(|g| (served(g), std::cmp::Reverse(g.minor)));
        match free {
            Some(g) => {
                chosen.entry(g.major).or_default().push(g);
                out.watch.push(field);
            }
            None => {
                let majors: Vec<String> = with
                    .iter()
                    .map(|g| g.major)
                    .collect::<std::collections::BTreeSet<u16>>()
                    .into_iter()
                    .map(|major| {
                        let names: Vec<String> = chosen
                            .get(&major)
                            .map(|c| {
                                c.iter()
                                    .map(|g| format!("{}.{}", g.major, g.minor))
                                    .collect()
                            })
                            .unwrap_or_default();
                        format!("major id {major} (groups {})", names.join(", "))
                    })
                    .collect();
                out.refused.push((
                    field,
                    format!(
                        "DCGM multiplexes at most {MAX_PASSES} metric groups of one major id, and \
                         the fields wanted before it fill {} (DCGM_ST_PROFILING_MULTI_PASS)",
                        majors.join(" and ")
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
    fn groups_of_one_major_id_are_multiplexed_up_to_five_and_the_sixth_is_refused() {
        // As on an A100: SM/tensor/FP32, FP64 and FP16 in three minor groups of major 0.
        let a100 = [
            g(0, 1, &[1002, 1003, 1004, 1007]),
            g(0, 2, &[1006]),
            g(0, 3, &[1008]),
            g(1, 0, &[1005]),
        ];
        let r = resolve(&[1002, 1006, 1008, 1005], &a100);
        assert_eq!(r.watch, vec![1002, 1006, 1008, 1005]);
        assert!(r.refused.is_empty());
        // Six groups of one major id: the sixth field's group does not fit.
        let six: Vec<MetricGroup> = (0..6).map(|m| g(0, m, &[1001 + m])).collect();
        let r = resolve(&[1001, 1002, 1003, 1004, 1005, 1006], &six);
        assert_eq!(r.watch, vec![1001, 1002, 1003, 1004, 1005]);
        assert_eq!(r.refused.len(), 1);
        assert_eq!(r.refused[0].0, 1006);
        assert!(
            r.refused[0]
                .1
                .contains("major id 0 (groups 0.0, 0.1, 0.2, 0.3, 0.4)"),
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
