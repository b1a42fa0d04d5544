//! The cardinality controls' settings: `--include-families`, `--exclude-families`,
//! `--drop-labels` and `--max-labels-per-series` (flags, variables, or the `metrics.*` keys of
//! `--config-file`), checked into the exposition's [`Cardinality`]; and the labels-per-series
//! guard's arithmetic (`fit_labels`), run once the counters are loaded (by `Config::fit_labels`,
//! in `labels_per_series.rs`); and the family filter's check against the counters loaded
//! (`check_families`: a filter that would serve no GPU family is refused, at start-up and on a
//! reload of the counters file, as a collection that matches no field is).
//!
//! It decides what is refused (a glob that does not parse, a label that tells series apart, a
//! family over the limit, a filter that leaves nothing) and says where the value came from; the
//! filtering itself is `exposition::filter`'s. It must not read files or touch NVML.

use super::cli::Cli;
use super::origin::{FileMerge, Setting};
use crate::base::shown::quoted;
use crate::catalogue::csv::CounterSet;
use crate::catalogue::labels::LabelShape;
use crate::catalogue::profile::Profile;
use crate::exposition::filter::{
    Cardinality, DEFAULT_MAX_LABELS, NEVER_DROPPED, OWN_GPU_FAMILIES, SeriesLabels, Widest,
    widest_series,
};

/// A cardinality control refused.
#[derive(Debug, thiserror::Error)]
pub enum CardinalityError {
    /// A control's value is refused.
    #[error("{setting} {message}")]
    Refused {
        /// The flag, or the configuration file and key.
        setting: String,
        /// What is wrong, starting with the value.
        message: String,
    },
    /// A family's series would have more labels than `--max-labels-per-series`.
    #[error("{0}")]
    LabelLimit(String),
    /// `--include-families` / `--exclude-families` would serve none of the GPU families.
    #[error("{0}")]
    NoFamilies(String),
    /// A new version of the counters file, read while running, would leave the pod labels
    /// less room per series than they were given at start.
    #[error(
        "the new version leaves room for {room} pod label(s) per series under \
         --max-labels-per-series {limit}, fewer than the {given} the running exporter allows \
         (--kubernetes-enable-pod-labels); restart the exporter to apply it"
    )]
    PodLabelRoom {
        /// The room the new version leaves.
        room: usize,
        /// `--max-labels-per-series`.
        limit: usize,
        /// The room given at start.
        given: usize,
    },
}

/// The validated controls: the filter, the label limit, whether the exporter's own GPU
/// families are served, and the family filters as given (`--include-families "DCGM_*"`, or the
/// file and key), for [`check_families`]' message.
pub(super) struct Controls {
    /// The filter.
    pub(super) filter: Cardinality,
    /// `--max-labels-per-series`.
    pub(super) max_labels: usize,
    /// The exporter's own `gpu_*` families are served.
    pub(super) own_families: bool,
    /// Each family filter given, as messages name it with its value.
    pub(super) family_filters: Vec<String>,
    /// `--series-labels`: where descriptions and holders go.
    pub(super) shape: LabelShape,
}

/// (flag, configuration-file key) of each control.
/// The flag's own slot of each cardinality control the file may set.
fn slot(cli: &mut Cli, setting: Setting) -> Option<&mut Option<String>> {
    match setting {
        Setting::IncludeFamilies => Some(&mut cli.cardinality.include_families),
        Setting::ExcludeFamilies => Some(&mut cli.cardinality.exclude_families),
        Setting::DropLabels => Some(&mut cli.cardinality.drop_labels),
        Setting::MaxLabelsPerSeries => Some(&mut cli.cardinality.max_labels_per_series),
        Setting::SeriesLabels => Some(&mut cli.cardinality.series_labels),
        _ => None,
    }
}

/// Merges the file's `metrics.*` controls into the flags no flag or variable gave, by the
/// merge's rule (which records each value taken from the file, for [`controls`]' `origin`).
pub(super) fn merge_file(cli: &mut Cli, entries: Vec<(Setting, String)>, m: &mut FileMerge) {
    for (setting, value) in entries {
        let Some(s) = slot(cli, setting) else {
            continue;
        };
        m.fill(s, Some(value), setting);
    }
}

/// The validated controls. `origin` names where a flag's value came from (the flag, or the
/// configuration file and key).
pub(super) fn controls(
    cli: &Cli,
    profile: Profile,
    origin: &dyn Fn(Setting) -> String,
) -> Result<Controls, CardinalityError> {
    let include = family_globs(
        Setting::IncludeFamilies,
        &cli.cardinality.include_families,
        origin,
    )?;
    let exclude = family_globs(
        Setting::ExcludeFamilies,
        &cli.cardinality.exclude_families,
        origin,
    )?;
    let drop_labels = drop_labels(cli, origin)?;
    let max = max_labels(cli, origin)?;
    let shape = series_labels(cli, profile, origin)?;
    // A dcgm-exporter profile serves that version's families only, unless more are asked for.
    let own_families = profile == Profile::Native || !include.is_empty();
    let filter = Cardinality {
        include,
        exclude,
        drop_labels,
    };
    Ok(Controls {
        filter,
        max_labels: max,
        own_families,
        family_filters: family_filters(cli, origin),
        shape,
    })
}

/// The items of a comma-separated list, trimmed, the empty ones left out.
fn items(v: &Option<String>) -> Vec<String> {
    v.as_deref()
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The family globs of `setting` (`--include-families`, `--exclude-families`), given as `v`;
/// refused at the first item that is not a family glob (letters, digits, `_`, `:` and the
/// glob's own characters) or does not parse.
fn family_globs(
    setting: Setting,
    v: &Option<String>,
    origin: &dyn Fn(Setting) -> String,
) -> Result<Vec<glob::Pattern>, CardinalityError> {
    items(v)
        .into_iter()
        .map(|g| {
            let bad = |why: String| CardinalityError::Refused {
                setting: origin(setting),
                message: format!("{}: {why}", quoted(&g)),
            };
            if !g.chars().all(|c| {
                c.is_ascii_alphanumeric()
                    || matches!(c, '_' | ':' | '*' | '?' | '[' | ']' | '!' | '-')
            }) {
                return Err(bad(
                    "not a family glob (letters, digits, _ and :, with * ? [..])".into(),
                ));
            }
            glob::Pattern::new(&g).map_err(|e| bad(format!("not a glob ({e})")))
        })
        .collect()
}

/// `--drop-labels`: label names, none of them one that tells series apart
/// ([`NEVER_DROPPED`]).
fn drop_labels(
    cli: &Cli,
    origin: &dyn Fn(Setting) -> String,
) -> Result<Vec<String>, CardinalityError> {
    let drop_labels = items(&cli.cardinality.drop_labels);
    for name in &drop_labels {
        let bad = |why: &str| CardinalityError::Refused {
            setting: origin(Setting::DropLabels),
            message: format!("{}: {why}", quoted(name)),
        };
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(bad("not a label name"));
        }
        if NEVER_DROPPED.contains(&name.as_str()) {
            return Err(bad(
                "never dropped: it tells series of one family apart, which would then collide \
                 (drop the family with --exclude-families instead)",
            ));
        }
    }
    Ok(drop_labels)
}

/// `--max-labels-per-series`: at least 10 (an entity's identity); [`DEFAULT_MAX_LABELS`]
/// when not given.
fn max_labels(cli: &Cli, origin: &dyn Fn(Setting) -> String) -> Result<usize, CardinalityError> {
    match cli
        .cardinality
        .max_labels_per_series
        .as_deref()
        .map(str::trim)
    {
        None | Some("") => Ok(DEFAULT_MAX_LABELS),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if n >= 10 => Ok(n),
            _ => Err(CardinalityError::Refused {
                setting: origin(Setting::MaxLabelsPerSeries),
                message: format!(
                    "{}: expected a number of labels, at least 10 (an entity's identity)",
                    quoted(v)
                ),
            }),
        },
    }
}

/// Each family filter given, as messages name it: where it came from and its value.
fn family_filters(cli: &Cli, origin: &dyn Fn(Setting) -> String) -> Vec<String> {
    [
        (Setting::IncludeFamilies, &cli.cardinality.include_families),
        (Setting::ExcludeFamilies, &cli.cardinality.exclude_families),
    ]
    .into_iter()
    .filter(|(_, v)| !items(v).is_empty())
    .map(|(setting, v)| {
        format!(
            "{} {}",
            origin(setting),
            quoted(v.as_deref().unwrap_or_default())
        )
    })
    .collect()
}

/// `--series-labels`: `lean` (native's default) or `full` (the `dcgm-*` profiles' only shape,
/// dcgm-exporter's labels on every series).
fn series_labels(
    cli: &Cli,
    profile: Profile,
    origin: &dyn Fn(Setting) -> String,
) -> Result<LabelShape, CardinalityError> {
    let given = cli.cardinality.series_labels.as_deref().map(str::trim);
    let shape = match given.map(str::to_ascii_lowercase).as_deref() {
        None | Some("") if profile == Profile::Native => LabelShape::Lean,
        None | Some("") => LabelShape::Full,
        Some("lean") => LabelShape::Lean,
        Some("full") => LabelShape::Full,
        Some(_) => {
            return Err(CardinalityError::Refused {
                setting: origin(Setting::SeriesLabels),
                message: format!(
                    "{}: expected lean or full",
                    quoted(given.unwrap_or_default())
                ),
            });
        }
    };
    if shape == LabelShape::Lean && profile != Profile::Native {
        return Err(CardinalityError::Refused {
            setting: origin(Setting::SeriesLabels),
            message: format!(
                "\"lean\" is native's shape: --compatibility {} serves dcgm-exporter's labels \
                 on every series (full)",
                profile.name()
            ),
        });
    }
    Ok(shape)
}

/// Refuses a family filter under which none of the GPU families would be served: none of the
/// metric rows of `counters`, nor (`own_families`) the exporter's own `gpu_*` families. Only
/// the exporter's health (`gpu_exporter_*`, `process_*`) would be left: a page without one GPU
/// series, which looks like a node without GPUs. `given` names the filters and their values.
pub(super) fn check_families(
    counters: &CounterSet,
    filter: &Cardinality,
    own_families: bool,
    given: &[String],
) -> Result<(), CardinalityError> {
    if filter.include.is_empty() && filter.exclude.is_empty() {
        return Ok(());
    }
    let mut rows: Vec<&str> = counters.metrics().map(|r| r.name.as_str()).collect();
    rows.dedup();
    let own: &[&str] = if own_families { OWN_GPU_FAMILIES } else { &[] };
    let families = || rows.iter().copied().chain(own.iter().copied());
    if families().any(|f| filter.serves(f)) {
        return Ok(());
    }
    let mut hints = Vec::new();
    for p in &filter.include {
        let g = p.as_str();
        let case = glob::MatchOptions {
            case_sensitive: false,
            ..glob::MatchOptions::new()
        };
        if !g.contains(['*', '?', '[']) && families().any(|f| f.starts_with(g)) {
            hints.push(format!("did you mean {}?", quoted(&format!("{g}*"))));
        } else if let Some(f) = families().find(|f| p.matches_with(f, case)) {
            hints.push(format!(
                "family names are case-sensitive: {} matches {f} only when written as it is",
                quoted(g)
            ));
        }
    }
    if filter.include.is_empty() {
        hints.push("the exclusions match every family".into());
    } else if filter
        .include
        .iter()
        .any(|p| families().any(|f| p.matches(f)))
    {
        hints.push("the exclusions leave out every family the inclusions keep".into());
    }
    let sample: Vec<&str> = rows.iter().copied().take(4).collect();
    let more = if rows.len() > sample.len() {
        ", …"
    } else {
        ""
    };
    let own_note = if own_families {
        " and the exporter's gpu_* families (gpu_health_status, gpu_xid_errors_total, …)"
    } else {
        ""
    };
    Err(CardinalityError::NoFamilies(format!(
        "{}: serves none of the GPU families, only the exporter's own health (gpu_exporter_*): \
         the counters file has {} ({}{more}){own_note}{}",
        given.join(" with "),
        match rows.len() {
            1 => "1 family".to_owned(),
            n => format!("{n} families"),
        },
        sample.join(", "),
        if hints.is_empty() {
            String::new()
        } else {
            format!("; {}", hints.join("; "))
        }
    )))
}

/// The labels-per-series guard: refuses when a family's widest series would have more than
/// `limit` labels (one more when pod labels are on, `pod_labels`), and returns the room left
/// for pod labels.
pub(super) fn fit_labels(
    counters: &CounterSet,
    labels: &SeriesLabels,
    filter: &Cardinality,
    limit: usize,
    pod_labels: bool,
) -> Result<usize, CardinalityError> {
    let widest = widest_series(counters, labels, filter);
    let need = |w: &Widest| w.names.len() + usize::from(pod_labels && w.pod_labels);
    if let Some(w) = widest.iter().max_by_key(|w| need(w))
        && need(w) > limit
    {
        let pods = if pod_labels && w.pod_labels {
            " and at least one pod label (--kubernetes-enable-pod-labels)"
        } else {
            ""
        };
        return Err(CardinalityError::LabelLimit(format!(
            "{} would have {} labels ({}){pods}, over --max-labels-per-series {limit}: \
             drop some with --drop-labels, or raise the limit",
            w.family,
            w.names.len(),
            w.names.join(", ")
        )));
    }
    // The pod labels get the room the widest family that carries them leaves.
    Ok(limit.saturating_sub(
        widest
            .iter()
            .filter(|w| w.pod_labels)
            .map(|w| w.names.len())
            .max()
            .unwrap_or(0),
    ))
}
