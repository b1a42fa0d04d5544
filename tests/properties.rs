//! Bounded property tests of the parsers that read input gpu-exporter does not control: the
//! counters CSV (operator files, ConfigMaps), kubelet device IDs, `/proc/<pid>/cgroup` lines
//! and the web config (YAML). For arbitrary and for near-valid input, none may panic, and what
//! they accept must be consistent. Each run prints how many cases ran and how long it took
//! (`properties: ...` on stderr, shown with `--nocapture` and in `.ci/run`'s log).
//!
//! The case counts keep the whole file to a few seconds on two cores; `PROPTEST_CASES`
//! overrides them for a longer run.

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Instant;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// Runs `test` over `cases` values of `strategy` (or `PROPTEST_CASES`), then says so.
fn check<S: Strategy>(
    name: &str,
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(cases);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let started = Instant::now();
    if let Err(e) = runner.run(&strategy, test) {
        panic!("{name}: {e}");
    }
    // Past the test harness's capture, so that `.ci/run`'s log records what ran.
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "properties: {name}: {cases} cases in {:.2} s",
        started.elapsed().as_secs_f64()
    );
}

/// Text made of the pieces a counters file is made of, in any order.
fn counters_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("DCGM_FI_DEV_GPU_TEMP".to_owned()),
        Just("DCGM_FI_DEV_SM_CLOCK_HERTZ".to_owned()),
        Just("dcgm_fi_prof_pcie_tx_bytes".to_owned()),
        Just("DCGM_EXP_XID_ERRORS_TOTAL".to_owned()),
        Just("DCGM_FI_DRIVER_VERSION".to_owned()),
        Just(", gauge, ".to_owned()),
        Just(", counter, ".to_owned()),
        Just(", label, ".to_owned()),
        Just("\n".to_owned()),
        Just("\r\n".to_owned()),
        Just("# ".to_owned()),
        Just("\"".to_owned()),
        Just(",".to_owned()),
        "[ -~]{0,12}",
        any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..60).prop_map(|v| v.concat())
}

#[test]
fn counters_parser_never_panics_and_accepted_rows_are_sound() {
    use gpu_exporter::catalogue::csv::parse_counters;
    let strategy = prop_oneof![counters_text(), any::<String>()];
    check("counters CSV parser", 3000, strategy, |text| {
        if let Ok(set) = parse_counters("p.csv", &text) {
            let lines = text.lines().count().max(1);
            for row in &set.rows {
                prop_assert!(!row.name.is_empty());
                prop_assert!(row.line >= 1 && row.line <= lines, "line {}", row.line);
            }
            for w in &set.warnings {
                prop_assert!(w.starts_with("p.csv"), "{w}");
            }
        }
        Ok(())
    });
}

#[test]
fn device_id_parser_never_panics_and_keeps_the_replica_suffix() {
    use gpu_exporter::sources::kubelet::device_id::{DeviceRef, parse_device_id};
    let strategy = prop_oneof![
        any::<String>(),
        "(GPU-|MIG-)?[0-9a-f-]{0,40}(::[0-9]{1,3})?",
        "[ -~]{0,30}::[ -~]{0,6}",
    ];
    check("kubelet device-ID parser", 3000, strategy, |id| {
        let _ = parse_device_id(&id);
        Ok(())
    });
    // A GPU UUID with the device plugin's `::<n>` keeps the UUID and gets replica n.
    let replicated = (
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        0u32..1000,
    );
    check(
        "kubelet device-ID replicas",
        1000,
        replicated,
        |(uuid, n)| {
            let whole = format!("GPU-{uuid}");
            let p = parse_device_id(&format!("{whole}::{n}"));
            prop_assert_eq!(p.replica, Some(n));
            prop_assert_eq!(p.device, DeviceRef::GpuUuid(whole.clone()));
            prop_assert_eq!(parse_device_id(&whole).replica, None);
            Ok(())
        },
    );
}

#[test]
fn cgroup_parser_never_panics() {
    use gpu_exporter::sources::cgroup::parse_cgroup;
    let line = prop_oneof![
        "[0-9]{1,2}:[a-z,=_]{0,20}:/[ -~]{0,120}",
        "0::/kubepods.slice/kubepods-[a-z]{0,10}-pod[0-9a-f_]{0,36}\\.slice/(cri-containerd|crio|docker)-[0-9a-f]{0,64}\\.scope",
        any::<String>(),
    ];
    let strategy = prop::collection::vec(line, 0..8).prop_map(|v| v.join("\n"));
    check("cgroup parser", 3000, strategy, |text| {
        let _ = parse_cgroup(&text);
        Ok(())
    });
}

#[test]
fn web_config_loader_never_panics() {
    use gpu_exporter::serve::web_config::WebConfig;
    let piece = prop_oneof![
        Just("tls_server_config:\n".to_owned()),
        Just("  min_version: TLS12\n".to_owned()),
        Just("  cert_file: /nonexistent.pem\n".to_owned()),
        Just("  client_auth_type: RequireAndVerifyClientCert\n".to_owned()),
        Just("basic_auth_users:\n".to_owned()),
        Just("  admin: $2y$04$abcdefghijklmnopqrstuv\n".to_owned()),
        Just("http_server_config:\n  headers:\n    X-Frame-Options: deny\n".to_owned()),
        Just("  ".to_owned()),
        Just(": ".to_owned()),
        Just("- ".to_owned()),
        "[ -~]{0,16}",
        Just("\n".to_owned()),
    ];
    let strategy = prop_oneof![
        prop::collection::vec(piece, 0..20).prop_map(|v| v.concat()),
        any::<String>()
    ];
    check("web config loader", 1500, strategy, |text| {
        let _ = WebConfig::parse(Path::new("/etc/web.yml"), &text);
        Ok(())
    });
}
