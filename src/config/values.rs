//! What the flags' values may be: the enum-valued flags as clap [`ValueEnum`]s (`--log-format`,
//! `--kubernetes-gpu-id-type`, `--compatibility`, `--dcgm-mode`, `--dcgm-log-level`,
//! `--nvlink-links`), read leniently as dcgm-exporter reads them (`lenient`: surrounding
//! blanks and case ignored), and the parsers of the number and boolean flags (`millis`,
//! `whole`, `go_bool`). A bad value is refused by clap, naming the flag and the accepted
//! values or range.
//!
//! Values only: which flag takes which is `cli.rs`'s, what they mean together `validate.rs`'s.

use std::ffi::OsStr;
use std::marker::PhantomData;

use clap::ValueEnum;
use clap::builder::{EnumValueParser, PossibleValue, TypedValueParser};

use crate::catalogue::profile::Profile;
use crate::gpu::reader::NvlinkLinks;

/// A flag value the parsers below refuse (clap prints it after the flag's name and value).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// Not one of Go's boolean spellings.
    #[error("not a boolean (expected one of {}, {})", GO_TRUE.join(", "), GO_FALSE.join(", "))]
    Bool,
    /// Not a whole number of milliseconds up to [`MAX_WINDOW_MS`].
    #[error("expected a whole number of milliseconds in {min}..={MAX_WINDOW_MS}")]
    Millis {
        /// The least the flag accepts (checked by validation, which names it).
        min: u64,
    },
    /// Not a whole number in the flag's range.
    #[error("expected a whole number in {min}..={max}")]
    Whole {
        /// The least accepted.
        min: u64,
        /// The most accepted.
        max: u64,
    },
}

/// The longest interval or window accepted, in ms (one day): a larger value is a typo.
pub const MAX_WINDOW_MS: u64 = 86_400_000;

/// The strings Go's `strconv.ParseBool` accepts, which dcgm-exporter's flag library uses for
/// `--flag=VALUE` and for boolean environment variables.
pub(super) const GO_TRUE: [&str; 6] = ["1", "t", "T", "TRUE", "true", "True"];
/// See [`GO_TRUE`].
pub(super) const GO_FALSE: [&str; 6] = ["0", "f", "F", "FALSE", "false", "False"];

/// Parses a boolean as Go's `strconv.ParseBool` does. An empty value is `false`, as
/// dcgm-exporter's flag library reads a boolean environment variable set to "".
pub fn go_bool(s: &str) -> Result<bool, ValueError> {
    if s.is_empty() {
        Ok(false)
    } else if GO_TRUE.contains(&s) {
        Ok(true)
    } else if GO_FALSE.contains(&s) {
        Ok(false)
    } else {
        Err(ValueError::Bool)
    }
}

/// A millisecond flag's parser: a whole number up to [`MAX_WINDOW_MS`]; anything else (a
/// negative number, a unit, an overflow) is refused naming the accepted range, `min..=MAX`.
/// Values under `min` pass, so that validation refuses them naming the minimum and where the
/// value came from, as it does for a value from the flag's variable; `min` is named in the
/// range of this refusal.
pub(super) fn millis(
    min: u64,
) -> impl Fn(&str) -> Result<u64, ValueError> + Clone + Send + Sync + 'static {
    move |s: &str| {
        s.trim()
            .parse::<u64>()
            .ok()
            .filter(|v| *v <= MAX_WINDOW_MS)
            .ok_or(ValueError::Millis { min })
    }
}

/// A whole-number flag's parser: a number in `min..=max` that fits `T`; anything else (a
/// negative number, a unit, an overflow) is refused naming the accepted range. Give the flag
/// `allow_negative_numbers` too, so that `-1` reaches this parser instead of being taken for a
/// flag.
pub(super) fn whole<T>(
    min: u64,
    max: u64,
) -> impl Fn(&str) -> Result<T, ValueError> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64>,
{
    move |s: &str| {
        s.trim()
            .parse::<u64>()
            .ok()
            .filter(|v| (min..=max).contains(v))
            .and_then(|v| T::try_from(v).ok())
            .ok_or(ValueError::Whole { min, max })
    }
}

/// An enum flag's parser: the value with its surrounding blanks removed (and `dcgm-v4.8.2`
/// read as `dcgm-4.8.2`), matched against `E`'s names and aliases in any case; clap's error
/// otherwise, naming the flag and listing the accepted values.
#[derive(Clone)]
pub(super) struct Lenient<E>(PhantomData<E>);

/// [`Lenient`] for `E`.
pub(super) fn lenient<E>() -> Lenient<E> {
    Lenient(PhantomData)
}

impl<E: ValueEnum + Clone + Send + Sync + 'static> TypedValueParser for Lenient<E> {
    type Value = E;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<E, clap::Error> {
        let inner = EnumValueParser::<E>::new();
        let Some(text) = value.to_str() else {
            return inner.parse_ref(cmd, arg, value);
        };
        let trimmed = text.trim();
        let normal = trimmed.to_ascii_lowercase().replace("dcgm-v", "dcgm-");
        if let Ok(v) = E::from_str(&normal, true) {
            return Ok(v);
        }
        inner.parse_ref(cmd, arg, OsStr::new(trimmed))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            E::value_variants()
                .iter()
                .filter_map(ValueEnum::to_possible_value),
        ))
    }
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One line of text per event (the default).
    Text,
    /// One JSON object per line.
    Json,
}

/// `--kubernetes-gpu-id-type`: how the device plugin names GPUs (validated for compatibility;
/// both forms are recognised whatever the value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GpuIdType {
    /// By UUID (the default).
    Uid,
    /// By device name.
    DeviceName,
}

/// `--dcgm-mode`: how DCGM is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DcgmMode {
    /// The hostengine of `-r/--remote-hostengine-info`.
    Remote,
    /// An in-process hostengine.
    Embedded,
    /// No DCGM.
    Off,
}

/// `--dcgm-log-level`: DCGM's log levels, by their names in DCGM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "UPPER")]
pub enum DcgmLogLevel {
    /// Nothing (dcgm-exporter's default).
    None,
    /// Fatal errors.
    Fatal,
    /// Errors.
    Error,
    /// Warnings.
    Warn,
    /// Information.
    Info,
    /// Debugging.
    Debug,
    /// Everything.
    Verb,
}

impl DcgmLogLevel {
    /// The level's name, as DCGM and the warnings spell it.
    pub fn name(self) -> String {
        self.to_possible_value()
            .map(|v| v.get_name().to_owned())
            .unwrap_or_default()
    }
}

impl ValueEnum for Profile {
    fn value_variants<'a>() -> &'a [Self] {
        &Profile::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()).aliases(self.aliases().iter().copied()))
    }
}

impl ValueEnum for NvlinkLinks {
    fn value_variants<'a>() -> &'a [Self] {
        &[NvlinkLinks::PerLink, NvlinkLinks::Totals]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(match self {
            NvlinkLinks::PerLink => "per-link",
            NvlinkLinks::Totals => "totals",
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse<E: ValueEnum + Clone + Send + Sync + 'static>(v: &str) -> Result<E, String> {
        let cmd =
            clap::Command::new("t").arg(clap::Arg::new("x").long("x").value_parser(lenient::<E>()));
        cmd.try_get_matches_from(["t", "--x", v])
            .map_err(|e| e.to_string())
            .and_then(|mut m| m.remove_one::<E>("x").ok_or_else(|| "no value".to_owned()))
    }

    #[test]
    fn enum_values_are_read_as_dcgm_exporter_spells_them() {
        assert_eq!(parse::<Profile>(" DCGM-v4.8.3 "), Ok(Profile::Dcgm484));
        assert_eq!(parse::<Profile>("dcgm-4.9.0"), Ok(Profile::Dcgm49));
        assert_eq!(parse::<Profile>("dcgm-4.10.0"), Ok(Profile::Dcgm410));
        assert_eq!(parse::<Profile>("DCGM-v4.10"), Ok(Profile::Dcgm410));
        assert_eq!(parse::<Profile>("Native"), Ok(Profile::Native));
        assert_eq!(parse::<Profile>("dcgm-4.8.3"), Ok(Profile::Dcgm484));
        for p in Profile::ALL {
            assert_eq!(parse::<Profile>(p.name()), Ok(p));
        }
        assert_eq!(parse::<DcgmLogLevel>(" Info "), Ok(DcgmLogLevel::Info));
        assert_eq!(parse::<DcgmMode>("EMBEDDED"), Ok(DcgmMode::Embedded));
        assert_eq!(parse::<GpuIdType>("device-name"), Ok(GpuIdType::DeviceName));
        assert_eq!(parse::<NvlinkLinks>("per-link"), Ok(NvlinkLinks::PerLink));
        let e = parse::<Profile>("4.8.4").unwrap_err();
        assert!(
            e.contains("'4.8.4'") && e.contains("--x") && e.contains("dcgm-4.8.2, dcgm-4.8.4"),
            "{e}"
        );
        // Each of DCGM's log level names is one of ours, and the other way round.
        for level in DcgmLogLevel::value_variants() {
            assert!(
                crate::dcgm::parse_log_level(&level.name()).is_some(),
                "{level:?}"
            );
        }
        assert_eq!(DcgmLogLevel::value_variants().len(), 7);
    }
}
