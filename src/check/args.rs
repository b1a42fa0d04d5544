//! `gpu-exporter check`'s command line: its own arguments (`--output human|json`,
//! `--hardware-report`, `--timeout`) defined with clap on top of the daemon's flags, so a DaemonSet's
//! arguments can be given unchanged, in any order with check's own.
//!
//! Parsing only; it must not run any check.

use std::ffi::OsString;

use clap::{Arg, ArgAction};

use crate::config::Cli;

/// How the report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// A readable report (the default).
    Human,
    /// JSON, for machines.
    Json,
    /// A Markdown table for docs/hardware.md or an issue.
    HardwareReport,
}

/// A value of check's own flags that clap refuses (clap prints it as a usage error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    /// `--timeout` is not a Go duration.
    #[error("--timeout takes a duration such as 60s or 2m, not {0}")]
    TimeoutSyntax(String),
    /// `--timeout` is shorter than 1 s or longer than 1 h.
    #[error("--timeout {0}: must be between 1s and 1h")]
    TimeoutRange(String),
    /// `--output` is neither `human` nor `json`.
    #[error("--output takes human or json, not {0}")]
    Output(String),
}

/// What `gpu-exporter check` was asked.
#[derive(Debug, Clone)]
pub struct CheckArgs {
    /// The report's form.
    pub output: Output,
    /// The daemon's flags, as the daemon would read them.
    pub daemon: Cli,
    /// How long all the checks may take (`--timeout`).
    pub timeout: std::time::Duration,
}

/// `--timeout`'s default: far more than a healthy node needs (a few seconds), far less than a
/// Helm test's or a person's patience.
pub const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// `--timeout`'s values: a Go duration (`90s`, `2m`) from 1 s to 1 h.
fn timeout(v: &str) -> Result<std::time::Duration, ArgsError> {
    let d =
        crate::base::duration::parse_go(v).map_err(|_| ArgsError::TimeoutSyntax(v.to_owned()))?;
    if d < std::time::Duration::from_secs(1) || d > std::time::Duration::from_secs(3600) {
        return Err(ArgsError::TimeoutRange(v.to_owned()));
    }
    Ok(d)
}

const ABOUT: &str = "Diagnoses this node as the daemon would see it: flags and files, NVML and \
every GPU and MIG instance, each configured field, the kubelet pod-resources socket and the \
Kubernetes API. Takes the daemon's own flags and environment (e.g. the DaemonSet's arguments \
unchanged). Exit status: 0 everything configured works, 1 something configured does not, 2 \
usage.";

/// `--output`'s values.
fn output(v: &str) -> Result<bool, ArgsError> {
    match v {
        "json" => Ok(true),
        "human" => Ok(false),
        other => Err(ArgsError::Output(other.to_owned())),
    }
}

/// The command: the daemon's flags plus check's own.
pub fn command() -> clap::Command {
    Cli::go_command()
        .name("gpu-exporter check")
        .bin_name("gpu-exporter check")
        .about(ABOUT)
        .after_help(None::<&str>)
        .override_usage(
            "gpu-exporter check [--output human|json] [--hardware-report] [DAEMON FLAGS...]",
        )
        .arg(
            Arg::new("output")
                .long("output")
                .value_name("human|json")
                .help("A readable report (human, the default) or JSON for machines")
                .value_parser(output),
        )
        .arg(
            Arg::new("hardware_report")
                .long("hardware-report")
                .action(ArgAction::SetTrue)
                .help("A Markdown table for docs/hardware.md or an issue"),
        )
        .arg(
            Arg::new("timeout")
                .long("timeout")
                .value_name("DURATION")
                .help(
                    "How long all the checks may take (default 60s); past it the check fails \
                     saying what it was waiting for (a hung NVML or DCGM load or call)",
                )
                .value_parser(timeout),
        )
}

/// Parses `args` (`gpu-exporter check …`: the program name, then `check`, then the rest).
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<CheckArgs, clap::Error> {
    let mut args = args.into_iter();
    let program = args.next().unwrap_or_else(|| "gpu-exporter".into());
    let rest = std::iter::once(program).chain(args.skip(1));
    let (daemon, matches) = Cli::try_parse_go_style_with(command(), rest)?;
    let output = if matches.get_flag("hardware_report") {
        Output::HardwareReport
    } else if matches.get_one::<bool>("output").copied().unwrap_or(false) {
        Output::Json
    } else {
        Output::Human
    };
    let timeout = matches
        .get_one::<std::time::Duration>("timeout")
        .copied()
        .unwrap_or(DEFAULT_TIMEOUT);
    Ok(CheckArgs {
        output,
        daemon,
        timeout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Result<CheckArgs, clap::Error> {
        parse(
            ["gpu-exporter", "check"]
                .iter()
                .chain(a)
                .map(OsString::from),
        )
    }

    #[test]
    fn own_arguments_anywhere_among_the_daemons() {
        let a = args(&["-k", "--output", "json", "-f", "/x.csv"]).unwrap();
        assert_eq!(a.output, Output::Json);
        assert!(a.daemon.kubernetes.enabled);
        assert_eq!(
            a.daemon.sampling.counters_file.as_deref(),
            Some(std::path::Path::new("/x.csv"))
        );
        assert_eq!(args(&["-output=human"]).unwrap().output, Output::Human);
        let a = args(&["--hardware-report", "-o"]).unwrap();
        assert_eq!(a.output, Output::HardwareReport);
        assert!(
            a.daemon.exposition.use_old_namespace,
            "-o stays the daemon's"
        );
        let e = args(&["--output", "yaml"]).unwrap_err().to_string();
        assert!(e.contains("--output takes human or json, not yaml"), "{e}");
    }
}
