//! NVLink per link and the NVSwitch fabric on the simulated HGX H200, HGX B200, GB200 NVL72
//! and L40S nodes: every link of every GPU exported (a link that goes down is a 0), errors
//! rising on one link only, the fabric registration and its health, DCGM's per-link and
//! fabric fields through a counters file, DCGM's link-entity fields (one series per link with
//! dcgm-exporter's link labels), NVSwitch fields that load with a warning, nothing on a board
//! without NVLink, and `--nvlink-links=totals`.
#![cfg(feature = "sim")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::{Run, SimNode, label, series, value};
use gpu_exporter::catalogue::csv::parse_counters;

/// The DCGM per-link and fabric fields a dcgm-exporter user would list.
const DCGM_LINK_CSV: &str = "\
DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L11, counter, CRC flit errors of link 11.
DCGM_FI_DEV_NVLINK_REPLAY_ERROR_L7_TOTAL, counter, Replays of link 7 (DCGM 4.6 name).
DCGM_FI_DEV_NVLINK_BANDWIDTH_L0, gauge, Link 0 MiB/s.
DCGM_FI_DEV_NVLINK_BANDWIDTH_L17, gauge, Link 17 MiB/s.
DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, gauge, All links MiB/s.
DCGM_FI_DEV_FABRIC_MANAGER_STATUS, gauge, Fabric registration.
DCGM_FI_DEV_FABRIC_HEALTH_SUMMARY, gauge, Fabric health.
DCGM_FI_DEV_FABRIC_HEALTH_MASK, gauge, Fabric health mask.
DCGM_FI_DEV_FABRIC_CLUSTER_UUID, label, Fabric cluster.
";

fn run_with(scenario: &str, csv: Option<&str>, per_link: bool) -> Run {
    let cfg = common::config(&[if per_link {
        "--nvlink-links=per-link"
    } else {
        "--nvlink-links=totals"
    }]);
    let counters = match csv {
        Some(text) => Arc::new(parse_counters("links.csv", text).unwrap()),
        None => common::default_counters(),
    };
    Run::new(
        SimNode::new(scenario, 7),
        counters,
        cfg.reader.clone(),
        cfg.encode_options(),
    )
}

/// DCGM's link-entity fields (entity group `DCGM_FE_LINK`), an NVSwitch field under its
/// pre-4.6 name and an NVLink port-register field.
const DCGM_LINK_ENTITY_CSV: &str = "\
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature.
DCGM_FI_DEV_NVLINK_GET_STATE, gauge, Link state.
DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_PER_LINK_TOTAL, counter, CRC flit errors per link.
DCGM_FI_DEV_NVLINK_REPLAY_ERROR_PER_LINK_TOTAL, counter, Replays per link.
DCGM_FI_DEV_NVLINK_THROUGHPUT_PER_LINK, gauge, MiB/s per link.
DCGM_FI_DEV_NVLINK_TX_THROUGHPUT_PER_LINK, gauge, MiB/s sent per link.
DCGM_FI_DEV_NVLINK_RX_THROUGHPUT_PER_LINK, gauge, MiB/s received per link.
DCGM_FI_PROF_NVLINK_TX_BYTES_PER_LINK, gauge, B/s sent per link.
DCGM_FI_DEV_NVSWITCH_LINK_FLIT_ERRORS, counter, Switch port flit errors.
DCGM_FI_DEV_NVLINK_PPCNT_PHYSICAL_LINK_DOWN_COUNTER, counter, Port link-down count.
";

/// (gpu, nvlink) → value of family `name` (one `error` kind when given).
fn per_link(text: &str, name: &str, error: Option<&str>) -> Vec<((u32, u32), f64)> {
    series(text, name)
        .into_iter()
        .filter(|l| error.is_none_or(|e| label(l, "error") == e))
        .map(|l| {
            let gpu = label(l, "gpu").parse().unwrap();
            let link = label(l, "nvlink").parse().unwrap();
            ((gpu, link), value(l))
        })
        .collect()
}

fn at(v: &[((u32, u32), f64)], gpu: u32, link: u32) -> f64 {
    v.iter()
        .find(|(k, _)| *k == (gpu, link))
        .map(|(_, x)| *x)
        .unwrap_or_else(|| panic!("no series for GPU {gpu} link {link}"))
}

#[test]
fn hgx_h200_every_link_a_link_down_and_errors_on_one_link() {
    let mut run = run_with("hgx-h200", None, true);
    let early = run.at(5.0);
    let up = per_link(&early, "gpu_nvlink_up", None);
    assert_eq!(up.len(), 8 * 18, "8 GPUs × 18 links");
    assert!(up.iter().all(|(_, v)| *v == 1.0), "every link up at 5 s");
    let links: BTreeSet<u32> = up.iter().map(|((_, l), _)| *l).collect();
    assert_eq!(links, (0..18).collect());
    // Every error kind of a Hopper link, ECC included, at 0 from the first tick.
    for kind in ["crc_flit", "crc_data", "replay", "recovery", "ecc_data"] {
        let e = per_link(&early, "gpu_nvlink_errors_total", Some(kind));
        assert_eq!(e.len(), 8 * 18, "{kind}");
        assert!(
            e.iter().all(|(_, v)| *v == 0.0),
            "{kind} at 0 before any fault"
        );
    }
    assert_eq!(series(&early, "gpu_fabric_info").len(), 8);
    // NVLink 4 has no FEC counters: the families are left out, not 0.
    assert!(series(&early, "gpu_nvlink_symbol_errors_total").is_empty());
    for l in series(&early, "gpu_fabric_health") {
        assert_eq!(value(l), 1.0, "healthy: {l}");
    }

    let t30 = run.at(30.0);
    let up = per_link(&t30, "gpu_nvlink_up", None);
    assert_eq!(up.len(), 8 * 18, "a link that goes down keeps its series");
    assert_eq!(at(&up, 3, 7), 0.0, "link 7 of GPU 3 is down from 20 s");
    assert_eq!(up.iter().filter(|(_, v)| *v == 0.0).count(), 1);
    let crc30 = per_link(&t30, "gpu_nvlink_errors_total", Some("crc_flit"));
    assert!(at(&crc30, 5, 11) > 0.0, "CRC errors on link 11 of GPU 5");
    assert!(
        crc30
            .iter()
            .filter(|((g, l), _)| (*g, *l) != (5, 11))
            .all(|(_, v)| *v == 0.0),
        "no other link errs"
    );
    let t60 = run.at(60.0);
    let crc60 = per_link(&t60, "gpu_nvlink_errors_total", Some("crc_flit"));
    assert!(
        at(&crc60, 5, 11) > at(&crc30, 5, 11),
        "and they keep rising"
    );
    // A down link carries nothing; the GPU's others carry its traffic.
    let tx30 = per_link(&t30, "gpu_nvlink_transmit_bytes_total", None);
    let tx60 = per_link(&t60, "gpu_nvlink_transmit_bytes_total", None);
    assert_eq!(
        at(&tx60, 3, 7),
        at(&tx30, 3, 7),
        "no bytes over a down link"
    );
    assert!(at(&tx60, 3, 6) > at(&tx30, 3, 6));
}

#[test]
fn dcgm_per_link_and_fabric_fields_from_a_counters_file() {
    let mut run = run_with("hgx-h200", Some(DCGM_LINK_CSV), false);
    run.at(20.0);
    let text = run.at(40.0);
    // With --nvlink-links=totals the exporter's own per-link families are left out …
    // (the per-GPU totals stay, without an `nvlink` label) …
    assert!(series(&text, "gpu_nvlink_up").is_empty());
    let errors = series(&text, "gpu_nvlink_errors_total");
    assert!(!errors.is_empty() && errors.iter().all(|l| !l.contains("nvlink=\"")));
    // … and the counters file's fields are there.
    let crc = series(&text, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L11");
    assert_eq!(crc.len(), 8);
    for l in &crc {
        let want_errors = label(l, "gpu") == "5";
        assert_eq!(value(l) > 0.0, want_errors, "{l}");
    }
    let replay = series(&text, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_L7_TOTAL");
    assert_eq!(replay.len(), 8, "the DCGM 4.6 name keeps the name written");
    assert!(
        replay
            .iter()
            .any(|l| label(l, "gpu") == "3" && value(l) > 0.0),
        "GPU 3's link 7 had replays before it went down"
    );
    // Bandwidth: two ticks give a rate; the links add up to the total.
    let total: f64 = series(&text, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL")
        .iter()
        .filter(|l| label(l, "gpu") == "0")
        .map(|l| value(l))
        .sum();
    let l0: f64 = series(&text, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0")
        .iter()
        .filter(|l| label(l, "gpu") == "0")
        .map(|l| value(l))
        .sum();
    assert!(total > 0.0 && l0 > 0.0, "total {total}, link 0 {l0}");
    assert!(
        ((l0 * 18.0) - total).abs() / total < 0.01,
        "18 equal links: link 0 {l0} × 18 ≠ total {total}"
    );
    assert_eq!(series(&text, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L17").len(), 8);
    for l in series(&text, "DCGM_FI_DEV_FABRIC_MANAGER_STATUS") {
        assert_eq!(value(l), 3.0, "registered: {l}");
    }
    // A label row describes the GPU: on gpu_device_info in the lean shape.
    let info = series(&text, "gpu_device_info");
    assert_eq!(info.len(), 8);
    for l in info {
        assert!(
            !label(l, "DCGM_FI_DEV_FABRIC_CLUSTER_UUID").is_empty(),
            "{l}"
        );
    }
    assert_eq!(series(&text, "DCGM_FI_DEV_FABRIC_HEALTH_SUMMARY").len(), 8);
    assert_eq!(series(&text, "DCGM_FI_DEV_FABRIC_HEALTH_MASK").len(), 8);
}

#[test]
fn gb200_fabric_health_degrades_and_recovers() {
    let mut run = run_with("gb200-nvl72", Some(DCGM_LINK_CSV), true);
    let summary = |text: &str, gpu: &str| {
        series(text, "gpu_fabric_health")
            .into_iter()
            .find(|l| label(l, "gpu") == gpu)
            .map(value)
            .unwrap()
    };
    let before = run.at(10.0);
    assert_eq!(per_link(&before, "gpu_nvlink_up", None).len(), 4 * 18);
    assert_eq!(summary(&before, "2"), 1.0);
    let during = run.at(60.0);
    assert_eq!(summary(&during, "2"), 3.0, "limited capacity");
    assert_eq!(summary(&during, "1"), 1.0);
    assert_eq!(at(&per_link(&during, "gpu_nvlink_up", None), 2, 14), 0.0);
    let dcgm = series(&during, "DCGM_FI_DEV_FABRIC_HEALTH_SUMMARY");
    assert!(
        dcgm.iter()
            .any(|l| label(l, "gpu") == "2" && value(l) == 3.0),
        "{dcgm:?}"
    );
    let after = run.at(400.0);
    assert_eq!(summary(&after, "2"), 1.0);
    assert_eq!(at(&per_link(&after, "gpu_nvlink_up", None), 2, 14), 1.0);
    // One clique, one cluster for the tray.
    let info = series(&after, "gpu_fabric_info");
    let clusters: BTreeSet<&str> = info.iter().map(|l| label(l, "cluster_uuid")).collect();
    assert_eq!((info.len(), clusters.len()), (4, 1));
}

#[test]
fn hgx_b200_links_are_on_the_physical_gpus_only() {
    let mut run = run_with("hgx-b200", None, true);
    let text = run.at(5.0);
    let up = series(&text, "gpu_nvlink_up");
    assert_eq!(
        up.len(),
        8 * 18,
        "GPU 7 is in MIG mode: its links are the GPU's"
    );
    assert!(up.iter().all(|l| !l.contains("GPU_I_ID")));
    assert_eq!(series(&text, "gpu_fabric_state").len(), 8);
    // NVLink 5 counts FEC-corrected symbol errors and what FEC left, per link.
    let later = run.at(300.0);
    let symbol = per_link(&later, "gpu_nvlink_symbol_errors_total", None);
    assert_eq!(symbol.len(), 8 * 18);
    let before = per_link(&text, "gpu_nvlink_symbol_errors_total", None);
    assert!(
        at(&symbol, 0, 0) > at(&before, 0, 0),
        "they grow with traffic"
    );
    let effective = per_link(&later, "gpu_nvlink_effective_errors_total", None);
    assert_eq!(effective.len(), 8 * 18);
    // And its bit error rates, decoded from NVML's mantissa/exponent: the simulator's one
    // symbol error per GiB is about 1.2e-10, rounded by NVML's encoding to 1e-10; none is
    // left after FEC, which NVML encodes as mantissa 15, exponent 255 and is exported as 0.
    let symbol_ber = per_link(&later, "gpu_nvlink_symbol_bit_error_ratio", None);
    assert_eq!(symbol_ber.len(), 8 * 18);
    assert_eq!(at(&symbol_ber, 0, 0), 1e-10);
    let effective_ber = per_link(&later, "gpu_nvlink_effective_bit_error_ratio", None);
    assert_eq!(effective_ber.len(), 8 * 18);
    assert!(effective_ber.iter().all(|(_, v)| *v == 0.0));
    // NVLink 4 has no BER fields: the families are left out.
    let mut h200 = run_with("hgx-h200", None, true);
    assert!(series(&h200.at(5.0), "gpu_nvlink_symbol_bit_error_ratio").is_empty());
}

#[test]
fn boards_without_nvlink_export_no_link_series() {
    let csv = format!("{DCGM_LINK_CSV}{DCGM_LINK_ENTITY_CSV}");
    let mut run = run_with("l40s", Some(&csv), true);
    run.at(5.0);
    let text = run.at(10.0);
    for family in [
        "gpu_nvlink_up",
        "gpu_nvlink_errors_total",
        "gpu_fabric_info",
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L11",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0",
        "DCGM_FI_DEV_FABRIC_MANAGER_STATUS",
        "DCGM_FI_DEV_NVLINK_GET_STATE",
        "DCGM_FI_DEV_NVLINK_THROUGHPUT_PER_LINK",
    ] {
        assert!(series(&text, family).is_empty(), "{family} on an L40S");
    }
    // Left out as unsupported, and said so: the per-link fields and the link-entity rows.
    let unsupported = series(&text, "gpu_exporter_field_unsupported");
    for field in [
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0",
        "DCGM_FI_DEV_NVLINK_GET_STATE",
        "DCGM_FI_DEV_NVLINK_THROUGHPUT_PER_LINK",
    ] {
        assert!(
            unsupported.iter().any(|l| label(l, "field") == field),
            "{field}: {unsupported:?}"
        );
    }
}

#[test]
fn dcgm_link_entity_fields_one_series_per_link() {
    let counters = parse_counters("links.csv", DCGM_LINK_ENTITY_CSV).unwrap();
    // The port-register row loads with a warning naming its line; the NVSwitch port row is
    // served by DCGM (tests/dcgm.rs), so it loads without one.
    let name = "DCGM_FI_DEV_NVLINK_PPCNT_PHYSICAL_LINK_DOWN_COUNTER";
    assert!(
        counters
            .warnings
            .iter()
            .any(|w| w.starts_with(&format!("links.csv:10: \"{name}\" will never produce data"))),
        "{name}: {:?}",
        counters.warnings
    );
    assert!(
        !counters
            .warnings
            .iter()
            .any(|w| w.contains("DCGM_FI_DEV_NVSWITCH_LINK_FLIT_ERRORS")),
        "{:?}",
        counters.warnings
    );
    // --nvlink-links=totals: links are read for the link-entity rows all the same. In the
    // full label shape, with dcgm-exporter's link label set.
    let cfg = common::config(&["--nvlink-links=totals", "--series-labels", "full"]);
    let mut run = Run::new(
        SimNode::new("hgx-h200", 7),
        Arc::new(parse_counters("links.csv", DCGM_LINK_ENTITY_CSV).unwrap()),
        cfg.reader.clone(),
        cfg.encode_options(),
    );
    let first = run.at(5.0);
    assert!(series(&first, "gpu_nvlink_up").is_empty());
    let state = series(&first, "DCGM_FI_DEV_NVLINK_GET_STATE");
    assert_eq!(state.len(), 8 * 18, "one series per link of each GPU");
    // dcgm-exporter's link label set, in its order.
    let names: Vec<&str> = state[0]
        .split_once('{')
        .unwrap()
        .1
        .split(",")
        .map(|kv| kv.split_once('=').unwrap().0)
        .collect();
    assert_eq!(
        names,
        [
            "nvlink",
            "gpu",
            "gpu_uuid",
            "pci_bus_id",
            "device",
            "model_name",
            "hostname"
        ]
    );
    assert!(
        label(state[0], "gpu_uuid").starts_with("GPU-"),
        "{}",
        state[0]
    );
    assert_eq!(label(state[0], "device"), "nvidia0");
    assert_eq!(label(state[0], "model_name"), "NVIDIA H200");
    // Errors at 0 from the first tick; rates need a second reading.
    let flit = per_link(
        &first,
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_PER_LINK_TOTAL",
        None,
    );
    assert_eq!(flit.len(), 8 * 18);
    assert!(flit.iter().all(|(_, v)| *v == 0.0));
    assert!(series(&first, "DCGM_FI_DEV_NVLINK_THROUGHPUT_PER_LINK").is_empty());
    // The NVSwitch and port-register rows have no series; they are listed as unsupported.
    for (name, canonical) in [
        (
            "DCGM_FI_DEV_NVSWITCH_LINK_FLIT_ERRORS",
            "DCGM_FI_DEV_NVSWITCH_LINK_FLIT_ERROR_TOTAL",
        ),
        (
            "DCGM_FI_DEV_NVLINK_PPCNT_PHYSICAL_LINK_DOWN_COUNTER",
            "DCGM_FI_DEV_NVLINK_PPCNT_PHYSICAL_LINK_DOWN_TOTAL",
        ),
    ] {
        assert!(series(&first, name).is_empty() && series(&first, canonical).is_empty());
        let listed = series(&first, "gpu_exporter_field_unsupported")
            .into_iter()
            .filter(|l| label(l, "field") == canonical)
            .count();
        assert_eq!(listed, 8, "{canonical} listed for each GPU");
    }

    run.at(25.0);
    let t30 = run.at(30.0);
    let state = per_link(&t30, "DCGM_FI_DEV_NVLINK_GET_STATE", None);
    assert_eq!(state.len(), 8 * 18, "a down link keeps its series");
    assert_eq!(at(&state, 3, 7), 0.0, "link 7 of GPU 3 is down from 20 s");
    assert_eq!(state.iter().filter(|(_, v)| *v == 0.0).count(), 1);
    let flit = per_link(
        &t30,
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_PER_LINK_TOTAL",
        None,
    );
    assert!(at(&flit, 5, 11) > 0.0, "CRC errors on link 11 of GPU 5");
    assert_eq!(
        flit.iter().filter(|(_, v)| *v > 0.0).count(),
        1,
        "on that link only"
    );
    let replay = per_link(&t30, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_PER_LINK_TOTAL", None);
    assert!(
        at(&replay, 3, 7) > 0.0,
        "GPU 3's link 7 had replays before it went down"
    );
    // Throughput: sent plus received, the same in MiB/s and in B/s, nothing on the down link.
    let total = per_link(&t30, "DCGM_FI_DEV_NVLINK_THROUGHPUT_PER_LINK", None);
    let tx = per_link(&t30, "DCGM_FI_DEV_NVLINK_TX_THROUGHPUT_PER_LINK", None);
    let rx = per_link(&t30, "DCGM_FI_DEV_NVLINK_RX_THROUGHPUT_PER_LINK", None);
    let tx_bytes = per_link(&t30, "DCGM_FI_PROF_NVLINK_TX_BYTES_PER_LINK", None);
    assert_eq!(total.len(), 8 * 18);
    assert!(at(&total, 0, 0) > 0.0, "traffic on GPU 0 link 0");
    for ((g, l), v) in &total {
        let sum = at(&tx, *g, *l) + at(&rx, *g, *l);
        assert!(
            (v - sum).abs() <= 1e-6 * v.max(1.0),
            "GPU {g} link {l}: {v} vs {sum}"
        );
        let b = at(&tx_bytes, *g, *l);
        let mib = at(&tx, *g, *l);
        assert!(
            (b - mib * 1_048_576.0).abs() <= 1e-6 * b.max(1.0),
            "GPU {g} link {l}"
        );
    }
    assert_eq!(at(&total, 3, 7), 0.0, "no traffic over a down link");
}

#[test]
fn ampere_has_twelve_links() {
    let mut run = run_with("a100-l4", None, true);
    let text = run.at(5.0);
    let up = per_link(&text, "gpu_nvlink_up", None);
    let links: BTreeSet<u32> = up.iter().map(|((_, l), _)| *l).collect();
    assert_eq!(
        links,
        (0..12).collect(),
        "the A100 has 12 links, the L4 none"
    );
    assert!(up.iter().all(|((g, _), _)| *g == 0));
    assert!(
        per_link(&text, "gpu_nvlink_errors_total", Some("ecc_data")).is_empty(),
        "no NVLink ECC counter on Ampere"
    );
}

/// NVLink 5's GPU-wide fields by their pre-4.6 and 4.6 names.
const NVLINK5_CSV: &str = "\
DCGM_FI_DEV_NVLINK_COUNT_RX_SYMBOL_ERRORS, counter, Symbol errors of all links.
DCGM_FI_DEV_NVLINK_COUNT_SYMBOL_BER, gauge, Symbol BER as NVML encodes it.
DCGM_FI_DEV_NVLINK_SYMBOL_BER_RATIO, gauge, Symbol BER (4.6 name).
DCGM_FI_DEV_NVLINK_EFFECTIVE_BER_RATIO, gauge, Effective BER (4.6 name).
DCGM_FI_DEV_NVLINK_RX_BYTES_TOTAL, counter, Bytes received on all links (4.6 name).
DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_3, counter, FEC history bin 3.
DCGM_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL, counter, NVLink ECC errors of all links.
";

#[test]
fn nvlink_5_gpu_totals_from_a_counters_file() {
    let mut run = run_with("hgx-b200", Some(NVLINK5_CSV), true);
    let text = run.at(300.0);
    // The GPU total is the sum of the links' counters, read in the same tick.
    let symbol = series(&text, "DCGM_FI_DEV_NVLINK_COUNT_RX_SYMBOL_ERRORS");
    assert_eq!(symbol.len(), 8, "one per physical GPU");
    let gpu0: f64 = per_link(&text, "gpu_nvlink_symbol_errors_total", None)
        .iter()
        .filter(|((g, _), _)| *g == 0)
        .map(|(_, v)| *v)
        .sum();
    let total = symbol
        .iter()
        .find(|l| label(l, "gpu") == "0")
        .map(|l| value(l));
    assert_eq!(total, Some(gpu0));
    assert!(gpu0 > 0.0);
    // GPU 0 carries traffic: NVML's code for 1e-10 (mantissa 1, exponent 10), decoded in the
    // ratio field. GPU 7, in MIG mode with no NVLink traffic here, has NVML's zero code.
    let on = |name: &str, gpu: &str| {
        series(&text, name)
            .into_iter()
            .find(|l| label(l, "gpu") == gpu)
            .map(value)
    };
    let raw = "DCGM_FI_DEV_NVLINK_COUNT_SYMBOL_BER";
    let ratio = "DCGM_FI_DEV_NVLINK_SYMBOL_BER_RATIO";
    assert_eq!(on(raw, "0"), Some(f64::from((1 << 8) | 10)));
    assert_eq!(on(ratio, "0"), Some(1e-10));
    assert_eq!(on(raw, "7"), Some(f64::from((15 << 8) | 255)));
    assert_eq!(on(ratio, "7"), Some(0.0));
    assert_eq!(
        series(&text, "DCGM_FI_DEV_NVLINK_EFFECTIVE_BER_RATIO").len(),
        8
    );
    let rx: f64 = series(&text, "DCGM_FI_DEV_NVLINK_RX_BYTES_TOTAL")
        .iter()
        .find(|l| label(l, "gpu") == "0")
        .map(|l| value(l))
        .unwrap();
    let rx_links: f64 = per_link(&text, "gpu_nvlink_receive_bytes_total", None)
        .iter()
        .filter(|((g, _), _)| *g == 0)
        .map(|(_, v)| *v)
        .sum();
    assert_eq!(rx, rx_links);
    assert_eq!(
        series(&text, "DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_3").len(),
        8
    );
    assert_eq!(
        series(&text, "DCGM_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL").len(),
        8
    );
    // On NVLink 4 only the ECC total is served; the others are listed as unsupported.
    let mut h200 = run_with("hgx-h200", Some(NVLINK5_CSV), true);
    let text = h200.at(30.0);
    assert_eq!(
        series(&text, "DCGM_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL").len(),
        8
    );
    assert!(series(&text, "DCGM_FI_DEV_NVLINK_SYMBOL_BER_RATIO").is_empty());
    let unsupported = series(&text, "gpu_exporter_field_unsupported");
    assert!(
        unsupported
            .iter()
            .any(|l| label(l, "field") == "DCGM_FI_DEV_NVLINK_COUNT_RX_SYMBOL_ERRORS"),
        "{unsupported:?}"
    );
}

#[test]
fn gpm_per_link_fields_match_the_links_data_counters() {
    let csv = "\
DCGM_FI_PROF_NVLINK_L0_TX_BYTES, gauge, Link 0 bytes/s sent (GPM).
DCGM_FI_PROF_NVLINK_L7_RX_BYTES, gauge, Link 7 bytes/s received (GPM).
DCGM_FI_PROF_NVLINK_L17_TX_BYTES, gauge, Link 17 bytes/s sent (GPM).
DCGM_FI_PROF_NVLINK_TX_BYTES_PER_LINK, gauge, Bytes/s sent per link.
DCGM_FI_PROF_NVLINK_RX_BYTES_PER_LINK, gauge, Bytes/s received per link.
";
    let mut run = run_with("hgx-h200", Some(csv), false);
    run.at(25.0);
    let text = run.at(30.0);
    let gpm = |name: &str, gpu: &str| {
        series(&text, name)
            .into_iter()
            .find(|l| label(l, "gpu") == gpu)
            .map(value)
            .unwrap_or_else(|| panic!("no {name} on GPU {gpu}"))
    };
    let tx = per_link(&text, "DCGM_FI_PROF_NVLINK_TX_BYTES_PER_LINK", None);
    let rx = per_link(&text, "DCGM_FI_PROF_NVLINK_RX_BYTES_PER_LINK", None);
    // GPM's per-link rate over the tick is the link's data counter over the same tick.
    for gpu in 0..8u32 {
        let g = gpu.to_string();
        let (a, b) = (gpm("DCGM_FI_PROF_NVLINK_L0_TX_BYTES", &g), at(&tx, gpu, 0));
        assert!(
            a > 0.0 && (a - b).abs() <= 1e-6 * a,
            "GPU {gpu}: GPM {a}, counters {b}"
        );
        let (a, b) = (gpm("DCGM_FI_PROF_NVLINK_L7_RX_BYTES", &g), at(&rx, gpu, 7));
        assert!(
            (a - b).abs() <= 1e-6 * a.max(1.0),
            "GPU {gpu} link 7: {a} vs {b}"
        );
    }
    assert_eq!(
        gpm("DCGM_FI_PROF_NVLINK_L7_RX_BYTES", "3"),
        0.0,
        "GPU 3's link 7 is down"
    );
    assert_eq!(series(&text, "DCGM_FI_PROF_NVLINK_L17_TX_BYTES").len(), 8);
    // The A100 has 12 links and no GPM: unsupported there, like every GPM field.
    let mut a100 = run_with("a100-l4", Some(csv), false);
    a100.at(5.0);
    assert!(series(&a100.at(10.0), "DCGM_FI_PROF_NVLINK_L0_TX_BYTES").is_empty());
}

/// The links' data counters are read only for series that use them: `--nvlink-links
/// per-link`, or a link-entity throughput row in the counters file. With the totals and no
/// such row, no link carries a byte count; the state and error counters are read either way.
#[test]
fn link_data_counters_are_read_only_for_series_that_use_them() {
    let throughput_row = "\
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature.
DCGM_FI_DEV_NVLINK_TX_THROUGHPUT_PER_LINK, gauge, MiB/s sent per link.
";
    for (csv, per_link, read) in [
        (None, false, false),
        (None, true, true),
        (Some(throughput_row), false, true),
    ] {
        let mut run = run_with("hgx-h200", csv, per_link);
        run.node.set_time(5.0);
        let snap = run.sampler.tick(5.0);
        let links: Vec<_> = snap.interconnect.iter().flat_map(|g| &g.links).collect();
        assert_eq!(
            links.len(),
            8 * 18,
            "every link, per_link={per_link} csv={csv:?}"
        );
        assert!(
            links.iter().all(|l| l.errors.len() == 5),
            "every link's error counters, per_link={per_link} csv={csv:?}"
        );
        let with_bytes = links.iter().filter(|l| l.tx_bytes.is_some()).count();
        assert_eq!(
            with_bytes,
            if read { links.len() } else { 0 },
            "data counters read, per_link={per_link} csv={csv:?}"
        );
    }
}
