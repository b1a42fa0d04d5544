//! The command line read as dcgm-exporter's Go flag library reads it, in front of clap: a long
//! flag written with one dash (`-collectors`, `-address=:9400`) and the short forms Go takes
//! (`-rbmn`) rewritten into clap's form ([`go_style_args`]); every on/off switch taking an
//! attached Go boolean (`-k=false`) and the last occurrence of a flag winning
//! ([`Cli::go_command`]); a bad value from an environment variable named as the variable; and
//! the one rule for environment variables set but blank (empty, or only blanks): each counts
//! as not set, whatever its flag, as dcgm-exporter's flag library skips an empty variable
//! (a Helm `value: ""`), the names recorded in [`Cli::blank_variables`] for a debug line. A
//! value clap's message would quote whole is cut to its first characters and its size.
//!
//! Syntax only: the flags themselves are `cli.rs`'s, their value parsers `values.rs`'s; it
//! must not check what the values mean.

use clap::ArgAction;

use super::cli::Cli;
use super::values::go_bool;

/// dcgm-exporter's documented short forms that are not one-letter flags (Go takes them with one
/// dash or two, and with `=VALUE`).
const GO_SHORT_FORMS: &[(&str, &str)] = &[("rbmn", "replace-blanks-in-model-name")];

/// Whether an environment variable's value counts as not set: empty, or only blanks.
fn blank(v: &std::ffi::OsStr) -> bool {
    v.to_str().is_some_and(|v| v.trim().is_empty())
}

/// The value of environment variable `name` under the one rule: `None` when it is not set or
/// set but blank. For the variables that are not a flag's (`RUST_LOG`).
pub fn env_value(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !blank(v))
}

/// The environment variables of `cmd`'s flags that are set but blank, in the order of the flags.
fn blank_variables(cmd: &clap::Command) -> Vec<String> {
    cmd.get_arguments()
        .filter_map(|a| a.get_env())
        .filter(|var| std::env::var_os(var).is_some_and(|v| blank(&v)))
        .map(|var| var.to_string_lossy().into_owned())
        .collect()
}

impl Cli {
    /// Parses the process's arguments as dcgm-exporter's Go flag library would accept them
    /// (see `go_style_args`); exits on a syntax error as clap does.
    pub fn parse_go_style() -> Self {
        Self::try_parse_go_style(std::env::args_os()).unwrap_or_else(|e| e.exit())
    }

    /// Parses `args` (the program name first) as [`Cli::parse_go_style`] does. A setting that
    /// `--config-file` may also set is `None` unless a flag or variable gave it.
    pub fn try_parse_go_style(
        args: impl IntoIterator<Item = std::ffi::OsString>,
    ) -> Result<Self, clap::Error> {
        Self::try_parse_go_style_with(Self::go_command(), args).map(|(cli, _)| cli)
    }

    /// Parses `args` with `cmd`, the daemon's [`Cli::go_command`] with arguments of its own
    /// added (`gpu-exporter check`'s), as [`Cli::try_parse_go_style`] does; returns the flags
    /// and the matches, from which the caller reads its own arguments.
    pub fn try_parse_go_style_with(
        cmd: clap::Command,
        args: impl IntoIterator<Item = std::ffi::OsString>,
    ) -> Result<(Self, clap::ArgMatches), clap::Error> {
        use clap::FromArgMatches;
        let args = go_style_args(&cmd, args);
        let matches = cmd.clone().try_get_matches_from(&args).map_err(|e| {
            let long = long_value(&e);
            cut(name_the_variable(e, &cmd, &args), long.as_deref(), &cmd)
        })?;
        let mut cli = Self::from_arg_matches(&matches)?;
        // Read from the flags' own definitions: `go_command` has taken the blank ones off.
        cli.blank_variables = blank_variables(&<Self as clap::CommandFactory>::command());
        cli.from_env = cmd
            .get_arguments()
            .filter(|a| {
                matches.value_source(a.get_id().as_str())
                    == Some(clap::parser::ValueSource::EnvVariable)
            })
            .filter_map(|a| {
                Some((
                    format!("--{}", a.get_long()?),
                    a.get_env()?.to_string_lossy().into_owned(),
                ))
            })
            .collect();
        Ok((cli, matches))
    }

    /// The command as Go's flag library reads it: every on/off switch (`-k`, `--debug`, …)
    /// also takes an attached value, `--kubernetes=false`, `-k=1`, and its environment
    /// variable any of Go's boolean spellings (`1`, `t`, `TRUE`, `False`, …); and an
    /// environment variable set but blank is not read at all (the flag's default, or the
    /// configuration file's value, stands), for every flag alike.
    pub fn go_command() -> clap::Command {
        use clap::CommandFactory;
        // Go's flag library lets any flag be given again: the last value wins.
        Self::command().args_override_self(true).mut_args(|a| {
            // The one rule for blank variables: as if not set (dcgm-exporter's flag library
            // skips an empty variable; a variable of only blanks is read the same here).
            let a = if a
                .get_env()
                .and_then(std::env::var_os)
                .is_some_and(|v| blank(&v))
            {
                a.env(None)
            } else {
                a
            };
            if !matches!(a.get_action(), ArgAction::SetTrue) {
                return a;
            }
            a.action(ArgAction::Set)
                .num_args(0..=1)
                .require_equals(true)
                .default_missing_value("true")
                .default_value("false")
                .value_name("BOOL")
                .value_parser(go_bool)
        })
    }
}

/// A bad value that came from an environment variable, not from the command line: clap names
/// the flag only, so the error is rewritten to name the variable (which is what a DaemonSet
/// sets).
fn name_the_variable(
    e: clap::Error,
    cmd: &clap::Command,
    args: &[std::ffi::OsString],
) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !matches!(
        e.kind(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
    ) {
        return e;
    }
    let Some(ContextValue::String(invalid)) = e.get(ContextKind::InvalidArg) else {
        return e;
    };
    // `--collect-interval <COLLECT_INTERVAL>`, `--kubernetes[=<BOOL>]`: the flag itself.
    let flag = invalid.split([' ', '[']).next().unwrap_or_default();
    let named = |a: &clap::Arg, x: &str| {
        a.get_long()
            .is_some_and(|l| x == format!("--{l}") || x.starts_with(&format!("--{l}=")))
            || a.get_short()
                .is_some_and(|s| x.starts_with(&format!("-{s}")))
    };
    let Some(arg) = cmd.get_arguments().find(|a| named(a, flag)) else {
        return e;
    };
    let Some(var) = arg.get_env() else {
        return e;
    };
    let on_command_line = args
        .iter()
        .skip(1)
        .any(|x| x.to_str().is_some_and(|x| named(arg, x)));
    if on_command_line || std::env::var_os(var).is_none() {
        return e;
    }
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    clap::Error::raw(
        e.kind(),
        format!("environment variable {}: {first}\n", var.to_string_lossy()),
    )
    .with_cmd(cmd)
}

/// The value `e` quotes (an invalid value, an unexpected argument) when it is too long to be
/// shown whole (`base::shown`'s rule).
fn long_value(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    [ContextKind::InvalidValue, ContextKind::InvalidArg]
        .into_iter()
        .filter_map(|k| match e.get(k) {
            Some(ContextValue::String(v)) => Some(v.clone()),
            _ => None,
        })
        .find(|v| crate::base::shown::shown(v).len() < v.len())
}

/// `e` with `long` (see [`long_value`]) cut to its first characters and its size: a 100 kB
/// variable is not echoed into one line. Without one, `e` as it is.
fn cut(e: clap::Error, long: Option<&str>, cmd: &clap::Command) -> clap::Error {
    let Some(long) = long else { return e };
    let text = e.to_string();
    let text = text.replace(long, &crate::base::shown::shown(long));
    let text = text.strip_prefix("error: ").unwrap_or(&text).to_owned();
    clap::Error::raw(e.kind(), text).with_cmd(cmd)
}

/// Rewrites the arguments Go's flag library accepts and clap does not: a long flag written with
/// one dash (`-collectors`, `-address=:9400`) gets its second dash, and `-rbmn` or `--rbmn`
/// (with or without `=VALUE`) becomes `--replace-blanks-in-model-name`. Short flags and their clusters (`-k`, `-f FILE`) are
/// left alone, as is everything after `--`.
pub fn go_style_args(
    cmd: &clap::Command,
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let longs: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
    let mut out = Vec::new();
    let mut rest = false;
    for (i, arg) in args.into_iter().enumerate() {
        let Some(s) = arg.to_str().filter(|_| i > 0 && !rest) else {
            out.push(arg);
            continue;
        };
        if s == "--" {
            rest = true;
            out.push(arg);
            continue;
        }
        let bare = s.strip_prefix("--").or_else(|| s.strip_prefix('-'));
        let (name, value) = bare.map_or(("", None), |b| {
            b.split_once('=').map_or((b, None), |(n, v)| (n, Some(v)))
        });
        if let Some((_, long)) = GO_SHORT_FORMS.iter().find(|(short, _)| *short == name) {
            out.push(match value {
                Some(v) => format!("--{long}={v}").into(),
                None => format!("--{long}").into(),
            });
            continue;
        }
        let rewritten = s
            .strip_prefix('-')
            .filter(|r| !r.starts_with('-'))
            .and_then(|r| {
                let name = r.split_once('=').map_or(r, |(n, _)| n);
                (name.len() > 1 && longs.contains(&name)).then(|| format!("--{r}"))
            });
        match rewritten {
            Some(r) => out.push(r.into()),
            None => out.push(arg),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::values::{GO_FALSE, GO_TRUE};
    use clap::{CommandFactory, Parser};

    fn rewrite(args: &[&str]) -> Vec<String> {
        let argv = std::iter::once("gpu-exporter")
            .chain(args.iter().copied())
            .map(std::ffi::OsString::from);
        go_style_args(&Cli::command(), argv)
            .into_iter()
            .skip(1)
            .map(|a| a.into_string().unwrap_or_default())
            .collect()
    }

    #[test]
    fn go_style_arguments_become_clap_arguments() {
        assert_eq!(rewrite(&["-rbmn"]), ["--replace-blanks-in-model-name"]);
        assert_eq!(
            rewrite(&["-collectors", "/etc/x.csv", "-address=:9400"]),
            ["--collectors", "/etc/x.csv", "--address=:9400"]
        );
        // Short flags, clusters, values and unknown names are left to clap.
        assert_eq!(
            rewrite(&[
                "-k",
                "-f",
                "-x.csv",
                "-ko",
                "-unknown-flag",
                "--devices",
                "g"
            ]),
            [
                "-k",
                "-f",
                "-x.csv",
                "-ko",
                "-unknown-flag",
                "--devices",
                "g"
            ]
        );
        // Nothing after `--` changes, and `-rbmn` stays a value there.
        assert_eq!(rewrite(&["--", "-rbmn"]), ["--", "-rbmn"]);
        // Two dashes and attached values too; a plain value `rbmn` is left alone.
        assert_eq!(
            rewrite(&["--rbmn", "-rbmn=false", "--rbmn=1", "-r", "rbmn"]),
            [
                "--replace-blanks-in-model-name",
                "--replace-blanks-in-model-name=false",
                "--replace-blanks-in-model-name=1",
                "-r",
                "rbmn"
            ]
        );
        // The rewritten line parses with the meaning dcgm-exporter gives it.
        let cli = Cli::parse_from(
            std::iter::once("gpu-exporter".to_owned()).chain(rewrite(&["-rbmn", "-no-hostname"])),
        );
        assert!(cli.exposition.replace_blanks_in_model_name);
        assert!(cli.exposition.no_hostname);
        assert!(cli.dcgm.remote_hostengine_info.is_none());
    }

    #[test]
    fn booleans_are_go_booleans() {
        for t in GO_TRUE {
            assert_eq!(go_bool(t), Ok(true));
        }
        for f in GO_FALSE.into_iter().chain([""]) {
            assert_eq!(go_bool(f), Ok(false));
        }
        for bad in ["yes", "on", "tRUE", " true", "2"] {
            assert!(go_bool(bad).is_err(), "{bad:?}");
        }
        let parse = |args: &[&str]| {
            Cli::try_parse_go_style(
                std::iter::once("gpu-exporter")
                    .chain(args.iter().copied())
                    .map(std::ffi::OsString::from),
            )
        };
        let cli = parse(&["--kubernetes=true", "-o=1", "-n", "--dump-compression"]).unwrap();
        assert!(
            cli.kubernetes.enabled
                && cli.exposition.use_old_namespace
                && cli.exposition.no_hostname
        );
        assert_eq!(cli.ignored.dump_compression, Some(true));
        let cli = parse(&["-k=false", "--debug=F", "--dump-compression=0"]).unwrap();
        assert!(!cli.kubernetes.enabled && !cli.log.debug);
        assert_eq!(cli.ignored.dump_compression, Some(false));
        // A setting --config-file may also set is typed "given or not": given explicitly,
        // even as false, it wins over the file; not given, it is None.
        let given = parse(&["--enable-exporter-metrics=false", "-c", "200"]).unwrap();
        assert_eq!(given.exposition.enable_exporter_metrics, Some(false));
        assert_eq!(given.sampling.collect_interval, Some(200));
        let bare = parse(&["--enable-exporter-metrics"]).unwrap();
        assert_eq!(bare.exposition.enable_exporter_metrics, Some(true));
        let none = parse(&[]).unwrap();
        assert_eq!(none.exposition.enable_exporter_metrics, None);
        assert_eq!(none.sampling.collect_interval, None);
        assert_eq!(none.web.max_concurrent_scrapes, None);
        // The last occurrence wins, as in Go.
        assert!(!parse(&["-k", "-k=false"]).unwrap().kubernetes.enabled);
        assert_eq!(
            parse(&["-c", "200", "-c", "300"])
                .unwrap()
                .sampling
                .collect_interval,
            Some(300)
        );
        let e = parse(&["-x", "-5"]).unwrap_err().to_string();
        assert!(
            e.contains("--xid-count-window-size") && e.contains("1..=86400000"),
            "{e}"
        );
        // Every whole-number flag takes -1 as a value, refused naming the flag and its range.
        for (args, flag, range) in [
            (
                &["--simulate-seed", "-1"][..],
                "--simulate-seed",
                "0..=18446744073709551615",
            ),
            (
                &["--max-concurrent-scrapes", "-1"],
                "--max-concurrent-scrapes",
                "0..=4294967295",
            ),
            (
                &["--max-concurrent-scrapes", "4294967296"],
                "--max-concurrent-scrapes",
                "0..=4294967295",
            ),
            (
                &["--web-max-connections", "-1"],
                "--web-max-connections",
                "1..=65536",
            ),
            (
                &["--pod-resources-timeout", "-1"],
                "--pod-resources-timeout",
                "100..=86400000",
            ),
        ] {
            let e = parse(args).unwrap_err().to_string();
            assert!(
                e.contains(flag) && e.contains(range) && !e.contains("unexpected argument"),
                "{args:?}: {e}"
            );
        }
        let ok = parse(&[
            "--simulate-seed",
            "18446744073709551615",
            "--max-concurrent-scrapes",
            "0",
        ])
        .unwrap();
        assert_eq!(ok.simulator.simulate_seed, u64::MAX);
        assert_eq!(ok.web.max_concurrent_scrapes, Some(0));
    }
}
