//! Tests of scenario parsing, defaults and every validation error.

use super::*;
use crate::curves::Kind;

fn parse_ok(text: &str) -> Scenario {
    match parse(text, "scenario file /x.toml", "x") {
        Ok(s) => s,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

fn parse_err(text: &str) -> String {
    match parse(text, "scenario file /x.toml", "x") {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn builtins_load() {
    for name in builtin::names() {
        let s = load(name).unwrap();
        assert_eq!(s.name, name);
        assert!(!s.gpus.is_empty());
    }
}

#[test]
fn h100_mig_structure() {
    let s = load("h100-mig").unwrap();
    assert_eq!(s.gpus.len(), 8);
    let g2 = &s.gpus[2];
    assert!(g2.mig_enabled);
    let l = g2.layout_at(0.0).unwrap();
    let gis: Vec<u32> = l.members.iter().map(|m| g2.instances[m.uid].gi).collect();
    assert_eq!(gis, vec![7, 8, 9, 10, 11, 12, 13]);
    let g5 = &s.gpus[5];
    let l = g5.layout_at(0.0).unwrap();
    let ids: Vec<(u32, &str)> = l
        .members
        .iter()
        .map(|m| (g5.instances[m.uid].gi, g5.instances[m.uid].profile.name))
        .collect();
    assert_eq!(ids, vec![(2, "3g.40gb"), (3, "2g.20gb"), (7, "1g.10gb")]);
    assert!(s.gpus[7].is_lost(150.0));
    assert!(!s.gpus[7].is_lost(119.9));
    assert!(!s.gpus[7].is_lost(180.0));
    assert!(s.gpus[6].function_unsupported("nvmlDeviceGetPowerUsage", 90.0));
    assert!(!s.gpus[6].function_unsupported("nvmlDeviceGetPowerUsage", 89.0));
    let xid48: Vec<f64> = s
        .events
        .iter()
        .filter(|e| e.data == 48)
        .map(|e| e.t)
        .collect();
    assert_eq!(xid48.len(), 3);
    assert!(xid48.iter().all(|t| (60.0..=70.0).contains(t)));
}

#[test]
fn minimal_file_and_defaults() {
    let s = parse_ok(
        r#"
        [[gpus]]
        model = "L4"
        "#,
    );
    assert_eq!(s.name, "x");
    assert_eq!(s.node, "sim-node");
    let g = &s.gpus[0];
    assert_eq!(g.workload.kind, Kind::Idle);
    assert!(g.uuid.starts_with("GPU-"));
    assert_eq!(g.uuid.len(), 40);
    assert_eq!(g.pci.bus_id(), "00000000:18:00.0");
    assert_eq!(g.pci.bus_id_legacy(), "0000:18:00.0");
    assert_eq!(g.serial.len(), 13);
}

#[test]
fn identity_is_stable_and_overridable() {
    let a = parse_ok("node = \"n1\"\n[[gpus]]\nmodel = \"L4\"\n");
    let b = parse_ok("node = \"n1\"\n[[gpus]]\nmodel = \"L4\"\n");
    let c = parse_ok("node = \"n2\"\n[[gpus]]\nmodel = \"L4\"\n");
    assert_eq!(a.gpus[0].uuid, b.gpus[0].uuid);
    assert_ne!(a.gpus[0].uuid, c.gpus[0].uuid);
    let d = parse_ok(
        "[[gpus]]\nmodel = \"L4\"\nuuid = \"GPU-1234abcd\"\nserial = \"42\"\npci_bus = \"0001:3b:00.0\"\n",
    );
    assert_eq!(d.gpus[0].uuid, "GPU-1234abcd");
    assert_eq!(d.gpus[0].serial, "42");
    assert_eq!(d.gpus[0].pci.bus_id(), "00000001:3B:00.0");
}

#[test]
fn unknown_model_names_file_and_line() {
    let e = parse_err("node = \"n\"\n\n[[gpus]]\nmodel = \"H900\"\n");
    assert_eq!(
        e,
        "scenario file /x.toml: line 4: unknown model \"H900\" (known models: \
         H100-SXM5-80GB, A100-SXM4-40GB, L4, H200-SXM5-141GB, B200-SXM-180GB, GB200, L40S, \
         A100-SXM4-80GB, T4)"
    );
}

#[test]
fn syntax_and_unknown_keys_are_reported_with_lines() {
    let e = parse_err("[[gpus]]\nmodel = \"L4\"\nmodle = 3\n");
    assert!(e.starts_with("scenario file /x.toml: line 3: "), "{e}");
    assert!(e.contains("modle"), "{e}");
    let e = parse_err("[[gpus]\nmodel = \"L4\"\n");
    assert!(e.starts_with("scenario file /x.toml: line 1: "), "{e}");
    let e = parse_err("[[gpu]]\nmodel = \"L4\"\n");
    assert!(e.contains("gpu"), "{e}");
}

#[test]
fn mig_validation() {
    let e = parse_err("[[gpus]]\nmodel = \"L4\"\nmig = []\n");
    assert!(e.contains("does not support MIG"), "{e}");
    let e = parse_err("[[gpus]]\nmodel = \"H100-SXM5-80GB\"\nmig = [{ profile = \"3g.20gb\" }]\n");
    assert!(
        e.contains("line 3") && e.contains("MIG profile \"3g.20gb\" is not valid"),
        "{e}"
    );
    let e = parse_err(
        "[[gpus]]\nmodel = \"H100-SXM5-80GB\"\nmig = [{ profile = \"4g.40gb\" }, { profile = \"4g.40gb\" }]\n",
    );
    assert!(e.contains("8 compute slices, more than the 7"), "{e}");
    let e = parse_err(
        "[[gpus]]\nmodel = \"H100-SXM5-80GB\"\nmig = [{ profile = \"3g.40gb\" }, { profile = \"3g.40gb\" }, { profile = \"1g.10gb\" }]\n",
    );
    assert!(e.contains("9 memory slices"), "{e}");
    let e = parse_err(
        "[[gpus]]\nmodel = \"H100-SXM5-80GB\"\nmig = [{ profile = \"1g.10gb\", gi = 7 }, { profile = \"1g.10gb\", gi = 7 }]\n",
    );
    assert!(e.contains("GPU instance id 7 used twice"), "{e}");
    let e = parse_err(
        "[[gpus]]\nmodel = \"H100-SXM5-80GB\"\nworkload = { kind = \"training\" }\nmig = []\n",
    );
    assert!(e.contains("MIG mode"), "{e}");
}

#[test]
fn default_gi_ids_follow_placement() {
    let s = parse_ok(
        "[[gpus]]\nmodel = \"A100-SXM4-40GB\"\nmig = [{ profile = \"4g.20gb\" }, { profile = \"2g.10gb\" }, { profile = \"1g.5gb\" }]\n",
    );
    let g = &s.gpus[0];
    let gis: Vec<u32> = g.instances.iter().map(|i| i.gi).collect();
    assert_eq!(gis, vec![1, 3, 7]);
    assert!(g.instances.iter().all(|i| i.uuid.starts_with("MIG-")));
}

#[test]
fn workload_validation() {
    let e = parse_err("[[gpus]]\nmodel = \"L4\"\nworkload = { kind = \"gaming\" }\n");
    assert!(e.contains("unknown workload kind \"gaming\""), "{e}");
    let e =
        parse_err("[[gpus]]\nmodel = \"L4\"\nworkload = { kind = \"training\", level = 1.5 }\n");
    assert!(e.contains("level = 1.5 is outside 0..1"), "{e}");
    let e = parse_err("[[gpus]]\nmodel = \"L4\"\nworkload = { kind = \"training\", period = 0 }\n");
    assert!(e.contains("period"), "{e}");
    let e = parse_err("[[gpus]]\nmodel = \"L4\"\nworkload = { kind = \"training\", duty = 0.5 }\n");
    assert!(e.contains("duty only applies"), "{e}");
}

#[test]
fn fault_validation() {
    let base = "[[gpus]]\nmodel = \"L4\"\n";
    let e = parse_err(&format!(
        "{base}[[faults]]\nat = 1\ngpu = 3\nkind = \"xid\"\nxid = 31\n"
    ));
    assert!(e.contains("line 3"), "{e}");
    assert!(
        e.contains("names GPU 3, but the scenario has 1 GPU(s)"),
        "{e}"
    );
    let e = parse_err(&format!(
        "{base}[[faults]]\nat = 1\ngpu = 0\nkind = \"meteor\"\n"
    ));
    assert!(e.contains("unknown fault kind \"meteor\""), "{e}");
    let e = parse_err(&format!(
        "{base}[[faults]]\nat = 1\ngpu = 0\nkind = \"xid\"\n"
    ));
    assert!(e.contains("needs `xid`"), "{e}");
    let e = parse_err(&format!(
        "{base}[[faults]]\nat = 1\ngpu = 0\nkind = \"xid\"\nxid = 31\nuntil = 4\n"
    ));
    assert!(e.contains("`until` does not apply"), "{e}");
    let e = parse_err(&format!(
        "{base}[[faults]]\nat = 5\ngpu = 0\nkind = \"lost\"\nuntil = 4\n"
    ));
    assert!(e.contains("must be later"), "{e}");
    let e = parse_err(&format!(
        "{base}[[faults]]\nat = 5\ngpu = 0\nkind = \"unsupported\"\nwhat = \"nvmlDeviceGetPowerUsag\"\n"
    ));
    assert!(e.contains("unknown unsupported target"), "{e}");
    let e = parse_err(&format!(
        "{base}[[faults]]\nat = 5\ngpu = 0\nkind = \"mig_layout\"\nmig = []\n"
    ));
    assert!(e.contains("not in MIG mode"), "{e}");
    let e = parse_err(&format!(
        "{base}[[faults]]\nat = 5\ngpu = 0\nkind = \"nvlink_errors\"\nreplay = 1\n"
    ));
    assert!(e.contains("has no NVLink"), "{e}");
    let e = parse_err(&format!("{base}unsupported = [\"field:abc\"]\n"));
    assert!(e.contains("field id must be a number"), "{e}");
    let e = parse_err(&format!(
        "{base}[[faults]]\nat = -1\ngpu = 0\nkind = \"xid\"\nxid = 31\n"
    ));
    assert!(e.contains("≥ 0"), "{e}");
}

#[test]
fn fault_timeline() {
    let s = parse_ok(
        r#"
        [[gpus]]
        model = "H100-SXM5-80GB"
        mig = [{ profile = "7g.80gb" }]
        unsupported = ["field:82"]

        [[faults]]
        at = 10
        gpu = 0
        kind = "xid"
        xid = 48
        repeat = 3
        every = 2

        [[faults]]
        at = 20
        gpu = 0
        kind = "ecc"
        sbe = 2
        dbe = 1

        [[faults]]
        at = 30
        gpu = 0
        kind = "ecc"
        sbe = 3

        [[faults]]
        at = 40
        gpu = 0
        kind = "mig_layout"
        mig = [{ profile = "3g.40gb" }, { profile = "3g.40gb" }]

        [[faults]]
        at = 41
        gpu = 0
        kind = "xid"
        xid = 43
        gi = 1

        [[faults]]
        at = 50
        gpu = 0
        kind = "power_limit"
        watts = 500
        until = 60

        [[faults]]
        at = 55
        gpu = 0
        kind = "remap"
        correctable = 1
        pending = true
        "#,
    );
    let g = &s.gpus[0];
    let times: Vec<f64> = s
        .events
        .iter()
        .filter(|e| e.data == 48)
        .map(|e| e.t)
        .collect();
    assert_eq!(times, vec![10.0, 12.0, 14.0]);
    assert_eq!(g.counter(Counter::EccSbe, 19.0), 0);
    assert_eq!(g.counter(Counter::EccSbe, 20.0), 2);
    assert_eq!(g.counter(Counter::EccSbe, 35.0), 5);
    assert_eq!(g.counter(Counter::EccDbe, 35.0), 1);
    assert_eq!(g.counter(Counter::RemapPending, 56.0), 1);
    assert_eq!(g.layout_at(39.0).map(|l| l.members.len()), Some(1));
    assert_eq!(g.layout_at(40.0).map(|l| l.members.len()), Some(2));
    let gi43 = s.events.iter().find(|e| e.data == 43).map(|e| (e.gi, e.ci));
    assert_eq!(gi43, Some((1, 0)));
    assert_eq!(g.power_limit_at(49.0), 700.0);
    assert_eq!(g.power_limit_at(55.0), 500.0);
    assert_eq!(g.power_limit_at(60.0), 700.0);
    assert!(g.is_unsupported(&Target::Field(82), 0.0));
    assert!(s.events.windows(2).all(|w| w[0].t <= w[1].t));
}

#[test]
fn appear_faults_only_on_trailing_gpus() {
    let gpus = "[[gpus]]\nmodel = \"L4\"\n[[gpus]]\nmodel = \"L4\"\n[[gpus]]\nmodel = \"L4\"\n";
    let appear =
        |gpu: usize, at: u32| format!("[[faults]]\nat = {at}\ngpu = {gpu}\nkind = \"appear\"\n");
    // GPUs 1 and 2 appear at 30 and 40 s.
    let s = parse_ok(&format!("{gpus}{}{}", appear(1, 30), appear(2, 40)));
    let at: Vec<Option<f64>> = s.gpus.iter().map(|g| g.appear_at).collect();
    assert_eq!(at, vec![None, Some(30.0), Some(40.0)]);
    assert!(!s.gpus[1].present(29.0) && s.gpus[1].present(30.0));
    assert!(s.gpus[0].present(0.0));
    // Same time for several trailing GPUs is fine, and file order does not matter.
    parse_ok(&format!("{gpus}{}{}", appear(2, 30), appear(1, 30)));
    // A GPU in the middle cannot appear late: GPU 2 (line 7) is there from the start. The
    // error points at GPU 1's fault (line 7, after the six lines of GPUs).
    let e = parse_err(&format!("{gpus}{}", appear(1, 30)));
    assert!(e.starts_with("scenario file /x.toml: line 7: "), "{e}");
    assert!(
        e.contains("appear fault on GPU 1 at 30 s, but GPU 2 is there from the start"),
        "{e}"
    );
    assert!(e.contains("only trailing GPUs may appear late"), "{e}");
    // Nor can a later GPU appear earlier than one before it.
    let e = parse_err(&format!("{gpus}{}{}", appear(1, 30), appear(2, 20)));
    assert!(e.contains("line 7: "), "{e}");
    assert!(e.contains("GPU 2 appears earlier, at 20 s"), "{e}");
    // At most one appear per GPU, and it takes no other keys.
    let e = parse_err(&format!("{gpus}{}{}", appear(2, 30), appear(2, 40)));
    assert!(e.contains("line 11: "), "{e}");
    assert!(
        e.contains("GPU 2 already has an appear fault (at 30 s)"),
        "{e}"
    );
    let e = parse_err(&format!("{gpus}{}until = 50\n", appear(2, 30)));
    assert!(
        e.contains("`until` does not apply to a \"appear\" fault (it takes: no keys besides"),
        "{e}"
    );
}

#[test]
fn driver_loaded_at() {
    let s = parse_ok("[[gpus]]\nmodel = \"L4\"\n");
    assert_eq!(s.driver_loaded_at, 0.0);
    let s = parse_ok("driver_loaded_at = 20\n[[gpus]]\nmodel = \"L4\"\n");
    assert_eq!(s.driver_loaded_at, 20.0);
    let s = parse_ok("driver_loaded_at = 2.5\n[[gpus]]\nmodel = \"L4\"\n");
    assert_eq!(s.driver_loaded_at, 2.5);
    let e = parse_err("node = \"n\"\ndriver_loaded_at = -1\n[[gpus]]\nmodel = \"L4\"\n");
    assert!(e.starts_with("scenario file /x.toml: line 2: "), "{e}");
    assert!(e.contains("driver_loaded_at = -1 must be"), "{e}");
    let e = parse_err("driver_loaded_at = \"soon\"\n[[gpus]]\nmodel = \"L4\"\n");
    assert!(e.contains("line 1"), "{e}");
}

#[test]
fn init_hangs_until() {
    assert_eq!(parse_ok("[[gpus]]\nmodel = \"L4\"\n").init_hangs_until, 0.0);
    let s = parse_ok("init_hangs_until = 600\n[[gpus]]\nmodel = \"L4\"\n");
    assert_eq!(s.init_hangs_until, 600.0);
    let e = parse_err("node = \"n\"\ninit_hangs_until = -2\n[[gpus]]\nmodel = \"L4\"\n");
    assert!(e.contains("line 2: init_hangs_until = -2 must be"), "{e}");
}

#[test]
fn xid_burst_with_sub_second_every() {
    let s = parse_ok(
        "[[gpus]]\nmodel = \"L4\"\n[[faults]]\nat = 10\ngpu = 0\nkind = \"xid\"\nxid = 13\nrepeat = 20\nevery = 0.05\n",
    );
    let times: Vec<f64> = s.events.iter().map(|e| e.t).collect();
    assert_eq!(times.len(), 20);
    for (k, t) in times.iter().enumerate() {
        assert!((t - (10.0 + 0.05 * k as f64)).abs() < 1e-9, "{times:?}");
    }
    let e = parse_err(
        "[[gpus]]\nmodel = \"L4\"\n[[faults]]\nat = 10\ngpu = 0\nkind = \"xid\"\nxid = 13\nevery = 0\n",
    );
    assert!(e.contains("every = 0 must be > 0"), "{e}");
}

#[test]
fn load_reports_missing_files() {
    let e = load("/nonexistent/scenario.toml").unwrap_err().to_string();
    assert!(e.contains("/nonexistent/scenario.toml"), "{e}");
    assert!(e.contains("h100-mig"), "{e}");
}

#[test]
fn reserved_tables_are_ignored() {
    let s = parse_ok("[[gpus]]\nmodel = \"L4\"\n[[pods]]\nname = \"p\"\nnamespace = \"ns\"\n");
    assert_eq!(s.gpus.len(), 1);
    let s = parse_ok(
        "[[gpus]]\nmodel = \"L4\"\n[[pods]]\nname = \"p\"\nstart = 3\nend = 9\n\
         [[jobs]]\nname = \"ci\"\nevery = 10\nduration = 8\ngpus = [0]\n",
    );
    assert_eq!(s.gpus.len(), 1);
}

#[test]
fn pci_parsing() {
    assert_eq!(
        Pci::parse("00000000:18:00.0").map(|p| p.bus_id_legacy()),
        Some("0000:18:00.0".to_string())
    );
    assert!(Pci::parse("0000:18:00").is_none());
    assert!(Pci::parse("0000:1ff:00.0").is_none());
    assert_eq!(Pci::parse("3b:00.0").map(|p| p.bus), Some(0x3B));
}

#[test]
fn thermal_and_power_brake_faults() {
    let s = parse_ok(
        r#"
        [[gpus]]
        model = "H100-SXM5-80GB"

        [[gpus]]
        model = "H100-SXM5-80GB"
        mig = [{ profile = "7g.80gb" }]

        [[faults]]
        at = 10
        gpu = 0
        kind = "thermal"
        celsius = 95
        until = 20

        [[faults]]
        at = 15
        gpu = 0
        kind = "thermal"
        celsius = 105.5

        [[faults]]
        at = 30
        gpu = 0
        kind = "power_brake"
        until = 40

        [[faults]]
        at = 50
        gpu = 1
        kind = "thermal"
        celsius = 90

        [[faults]]
        at = 60
        gpu = 1
        kind = "power_brake"
        "#,
    );
    let g = &s.gpus[0];
    assert_eq!(g.thermal_at(9.9), None);
    assert_eq!(g.thermal_at(10.0), Some(95.0));
    // Overlapping windows: the hottest wins; the first ends at 20 (exclusive), the second
    // never does.
    assert_eq!(g.thermal_at(15.0), Some(105.5));
    assert_eq!(g.thermal_at(20.0), Some(105.5));
    assert_eq!(g.thermal_at(1e6), Some(105.5));
    assert!(!g.power_braked(29.9));
    assert!(g.power_braked(30.0) && g.power_braked(39.9));
    assert!(!g.power_braked(40.0));
    // Device-level faults on a GPU in MIG mode.
    let m = &s.gpus[1];
    assert_eq!(m.thermal_at(49.0), None);
    assert_eq!(m.thermal_at(50.0), Some(90.0));
    assert!(!m.power_braked(59.0) && m.power_braked(1e6));
    // No events on the timeline.
    assert!(s.events.is_empty());
}

#[test]
fn thermal_and_power_brake_validation() {
    let base = "[[gpus]]\nmodel = \"L4\"\n";
    let fault = |kind: &str, extra: &str| {
        format!("{base}[[faults]]\nat = 5\ngpu = 0\nkind = \"{kind}\"\n{extra}")
    };
    let e = parse_err(&fault("thermal", "until = 9\n"));
    assert!(e.starts_with("scenario file /x.toml: line 3: "), "{e}");
    assert!(e.contains("a \"thermal\" fault needs `celsius`"), "{e}");
    // L4 idles at 28 + 0.66 × 16 ≈ 38.6 °C.
    for bad in ["38", "-5", "120.5", "nan", "inf"] {
        let e = parse_err(&fault("thermal", &format!("celsius = {bad}\n")));
        assert!(e.starts_with("scenario file /x.toml: line 3: "), "{e}");
        assert!(
            e.contains(&format!("celsius = {}", bad.parse::<f64>().unwrap())),
            "{e}"
        );
        assert!(e.contains("is outside 38.6..120 °C for L4"), "{e}");
    }
    parse_ok(&fault("thermal", "celsius = 39\n"));
    parse_ok(&fault("thermal", "celsius = 120\n"));
    let e = parse_err(&fault("thermal", "celsius = 95\nwatts = 50\n"));
    assert!(e.contains("line 3: "), "{e}");
    assert!(
        e.contains("`watts` does not apply to a \"thermal\" fault (it takes: celsius, until)"),
        "{e}"
    );
    let e = parse_err(&fault("thermal", "celsius = 95\nuntil = 5\n"));
    assert!(e.contains("until = 5 must be later than at = 5"), "{e}");
    let e = parse_err(&fault("power_brake", "celsius = 95\n"));
    assert!(e.contains("line 3: "), "{e}");
    assert!(
        e.contains("`celsius` does not apply to a \"power_brake\" fault (it takes: until)"),
        "{e}"
    );
    let e = parse_err(&fault("power_limit", "watts = 50\ncelsius = 95\n"));
    assert!(
        e.contains("`celsius` does not apply to a \"power_limit\" fault"),
        "{e}"
    );
    let e = parse_err(&fault("power_brake", "until = 1\n"));
    assert!(e.contains("until = 1 must be later than at = 5"), "{e}");
    let s = parse_ok(&fault("power_brake", ""));
    assert!(s.gpus[0].power_braked(5.0) && s.gpus[0].power_braked(1e9));
    // The kind list in the unknown-kind error names the new kinds.
    let e = parse_err(&fault("meteor", ""));
    assert!(e.contains("thermal, power_brake"), "{e}");
}

#[test]
fn hang_fault_needs_an_end_and_blocks_for_the_rest_of_its_window() {
    let base = "[[gpus]]\nmodel = \"L4\"\n[[faults]]\nat = 10\ngpu = 0\nkind = \"hang\"\n";
    let e = parse_err(base);
    assert!(e.contains("a \"hang\" fault needs `until`"), "{e}");
    let s = parse_ok(&format!("{base}until = 25\n"));
    let g = &s.gpus[0];
    assert_eq!(g.hang_left(9.9), None);
    assert_eq!(g.hang_left(10.0), Some(15.0));
    assert_eq!(g.hang_left(20.0), Some(5.0));
    assert_eq!(g.hang_left(25.0), None);
}

mod links;

/// A scenario path that is a FIFO, a device or an oversized file is refused at once, naming
/// the path, instead of blocking or filling memory; a regular file loads.
#[test]
fn scenario_files_are_read_bounded() {
    let dir = std::env::temp_dir().join(format!("nvml-sim-scenario-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo.toml");
    let _ = std::fs::remove_file(&fifo);
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a plain mkfifo on a path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let started = std::time::Instant::now();
    let e = load(fifo.to_str().unwrap()).unwrap_err().to_string();
    assert!(
        e.contains("fifo.toml") && e.contains("not a regular file"),
        "{e}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let e = load("/dev/zero").unwrap_err().to_string();
    assert!(
        e.contains("/dev/zero") && e.contains("not a regular file"),
        "{e}"
    );
    let big = dir.join("big.toml");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(MAX_SCENARIO_FILE + 1).unwrap();
    let e = load(big.to_str().unwrap()).unwrap_err().to_string();
    assert!(e.contains("big.toml") && e.contains("limit"), "{e}");
    let ok = dir.join("ok.toml");
    std::fs::write(&ok, "[[gpus]]\nmodel = \"L4\"\n").unwrap();
    assert_eq!(load(ok.to_str().unwrap()).unwrap().gpus.len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn vgpu_licence_is_licensed_unlicensed_or_absent() {
    let s = parse_ok(
        "node = \"n\"\n\n[[gpus]]\nmodel = \"L4\"\nvgpu_licence = \"licensed\"\n\n\
         [[gpus]]\nmodel = \"L4\"\nvgpu_licence = \"unlicensed\"\n\n[[gpus]]\nmodel = \"L4\"\n",
    );
    let l: Vec<Option<bool>> = s.gpus.iter().map(|g| g.vgpu_licence).collect();
    assert_eq!(l, [Some(true), Some(false), None]);
    let e = parse_err("node = \"n\"\n\n[[gpus]]\nmodel = \"L4\"\nvgpu_licence = \"yes\"\n");
    assert!(e.contains("line 5"), "{e}");
    assert!(
        e.contains("GPU 0: vgpu_licence \"yes\" must be \"licensed\" or \"unlicensed\""),
        "{e}"
    );
}
