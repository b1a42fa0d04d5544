//! Tests of NVLink per link and of the fabric registration through `Sim`: link state, error
//! counters, per-link throughput (its sum is the GPU total), the faults' effect over time, and
//! the new built-in scenarios' timelines. Without the C ABI: they must not touch the global
//! state (the ABI tests in `ffi` own it).

use nvml_wrapper_sys::bindings::field_id::{
    NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX,
    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
};

use super::super::*;
use crate::scenario::{load, parse};

const TX: u32 = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
const RX: u32 = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;

/// One busy GPU of `model` (training at level 1, no swing) with `faults` appended.
fn busy(model: &str, faults: &str) -> Sim {
    let text = format!(
        "[[gpus]]\nmodel = \"{model}\"\nworkload = {{ kind = \"training\", level = 1.0, \
         amplitude = 0 }}\n{faults}"
    );
    Sim::new(parse(&text, "test", "test").unwrap(), 1, Some(0.0))
}

/// Per-link values of field `id` on GPU `g` at `t`.
fn per_link(s: &mut Sim, g: usize, id: u32, links: u32, t: f64) -> Vec<u64> {
    (0..links)
        .map(|l| s.field_scoped(Dev::Gpu(g), id, l, t).unwrap())
        .collect()
}

#[test]
fn link_state_per_model() {
    let s = Sim::new(load("h100-mig").unwrap(), 1, Some(0.0));
    for l in 0..18 {
        assert_eq!(s.nvlink_state(Dev::Gpu(0), l, 30.0), Ok(true), "link {l}");
    }
    assert_eq!(
        s.nvlink_state(Dev::Gpu(0), 18, 30.0),
        Err(ret::INVALID_ARGUMENT)
    );
    // A GPU in MIG mode keeps its links; MIG devices have none of their own.
    assert_eq!(s.nvlink_state(Dev::Gpu(2), 0, 30.0), Ok(true));
    let mig = s.mig_devices(2, 30.0)[0];
    assert_eq!(
        s.nvlink_state(Dev::Mig(2, mig), 0, 30.0),
        Err(ret::NOT_SUPPORTED)
    );
    let s = Sim::new(load("a100-l4").unwrap(), 1, Some(0.0));
    assert_eq!(s.nvlink_state(Dev::Gpu(0), 11, 30.0), Ok(true));
    assert_eq!(
        s.nvlink_state(Dev::Gpu(0), 12, 30.0),
        Err(ret::INVALID_ARGUMENT)
    );
    // No NVLink: every link, existing index or not, is NOT_SUPPORTED.
    for l in [0, 5, 17, 18, 1000] {
        assert_eq!(
            s.nvlink_state(Dev::Gpu(1), l, 30.0),
            Err(ret::NOT_SUPPORTED)
        );
        assert_eq!(
            s.nvlink_errors(Dev::Gpu(1), l, 2, 30.0),
            Err(ret::NOT_SUPPORTED)
        );
    }
}

#[test]
fn error_counters_per_link_and_architecture() {
    let s = Sim::new(load("incidents").unwrap(), 1, Some(0.0));
    // GPU 2: crc_flit = 40, replay = 6, recovery = 1 at 10 s, spread over the 18 links.
    let at = |l: u32, c: u32, t: f64| s.nvlink_errors(Dev::Gpu(2), l, c, t).unwrap();
    assert_eq!((0..18).map(|l| at(l, 2, 10.0)).sum::<u64>(), 40);
    assert_eq!((0..18).map(|l| at(l, 0, 10.0)).sum::<u64>(), 6);
    assert_eq!((0..18).map(|l| at(l, 1, 10.0)).sum::<u64>(), 1);
    assert_eq!((0..18).map(|l| at(l, 2, 9.9)).sum::<u64>(), 0);
    assert_eq!(at(0, 3, 10.0), 0);
    // NVLink 4 serves the ECC data counter; Ampere's NVLink 3 does not.
    assert_eq!(s.nvlink_errors(Dev::Gpu(0), 0, 4, 10.0), Ok(0));
    assert_eq!(
        s.nvlink_errors(Dev::Gpu(0), 0, 5, 10.0),
        Err(ret::INVALID_ARGUMENT)
    );
    assert_eq!(
        s.nvlink_errors(Dev::Gpu(0), 18, 0, 10.0),
        Err(ret::INVALID_ARGUMENT)
    );
    let a = Sim::new(load("a100-l4").unwrap(), 1, Some(0.0));
    assert_eq!(
        a.nvlink_errors(Dev::Gpu(0), 0, 4, 10.0),
        Err(ret::NOT_SUPPORTED)
    );
    assert_eq!(a.nvlink_errors(Dev::Gpu(0), 0, 3, 10.0), Ok(0));
}

#[test]
fn per_link_throughput_sums_to_the_total() {
    let mut s = Sim::new(load("h100-mig").unwrap(), 3, Some(0.0));
    for t in [0.0, 0.4, 7.25, 30.0, 301.5] {
        for id in [TX, RX] {
            let total = s.field(Dev::Gpu(0), id, t).unwrap();
            let links = per_link(&mut s, 0, id, 18, t);
            assert_eq!(links.iter().sum::<u64>(), total, "t = {t}");
            // Spread evenly: every link within one KiB of an 18th.
            for v in &links {
                assert!(v.abs_diff(total / 18) <= 1, "{links:?} {total}");
            }
        }
    }
    assert!(s.field(Dev::Gpu(0), TX, 30.0).unwrap() > 1_000_000);
    // Scope 0 is link 0, not the sum (nvml.h: the sum is scopeId UINT_MAX).
    let total = s.field(Dev::Gpu(0), TX, 30.0).unwrap();
    assert_eq!(
        s.field_scoped(Dev::Gpu(0), TX, SCOPE_ALL_LINKS, 30.0),
        Ok(total)
    );
    assert!(s.field_scoped(Dev::Gpu(0), TX, 0, 30.0).unwrap() < total / 17);
    assert_eq!(
        s.field_scoped(Dev::Gpu(0), TX, 18, 30.0),
        Err(ret::INVALID_ARGUMENT)
    );
    // A GPU in MIG mode moves no NVLink traffic of its own.
    assert_eq!(s.field_scoped(Dev::Gpu(2), TX, 4, 30.0), Ok(0));
    // Boards without NVLink: NOT_SUPPORTED whatever the scope.
    let mut a = Sim::new(load("a100-l4").unwrap(), 1, Some(0.0));
    assert_eq!(
        a.field_scoped(Dev::Gpu(1), TX, 0, 30.0),
        Err(ret::NOT_SUPPORTED)
    );
    assert_eq!(
        a.field_scoped(Dev::Gpu(0), RX, 12, 30.0),
        Err(ret::INVALID_ARGUMENT)
    );
    let total = a.field(Dev::Gpu(0), RX, 30.0).unwrap();
    assert_eq!(per_link(&mut a, 0, RX, 12, 30.0).iter().sum::<u64>(), total);
}

#[test]
fn a_link_down_carries_nothing_and_the_others_carry_the_traffic() {
    let base_total = busy("H200-SXM5-141GB", "")
        .field(Dev::Gpu(0), TX, 80.0)
        .unwrap();
    let mut s = busy(
        "H200-SXM5-141GB",
        "[[faults]]\nat = 20\ngpu = 0\nkind = \"nvlink_down\"\nlink = 5\nuntil = 50\n",
    );
    assert_eq!(s.nvlink_state(Dev::Gpu(0), 5, 19.9), Ok(true));
    assert_eq!(s.nvlink_state(Dev::Gpu(0), 5, 20.0), Ok(false));
    assert_eq!(s.nvlink_state(Dev::Gpu(0), 5, 49.9), Ok(false));
    assert_eq!(s.nvlink_state(Dev::Gpu(0), 5, 50.0), Ok(true));
    assert_eq!(s.nvlink_state(Dev::Gpu(0), 4, 30.0), Ok(true));
    // The GPU total is what it is without the fault.
    assert_eq!(s.field(Dev::Gpu(0), TX, 80.0), Ok(base_total));
    let at20 = per_link(&mut s, 0, TX, 18, 20.0);
    let at35 = per_link(&mut s, 0, TX, 18, 35.0);
    let at50 = per_link(&mut s, 0, TX, 18, 50.0);
    let at60 = per_link(&mut s, 0, TX, 18, 60.0);
    assert_eq!(at35[5], at20[5], "a down link carries nothing");
    assert_eq!(at50[5], at20[5]);
    assert!(at60[5] > at50[5], "back up at 50 s");
    // Inside the window 17 links share what 18 shared before.
    let before = (at20[4] - per_link(&mut s, 0, TX, 18, 5.0)[4]) as f64 / 15.0;
    let inside = (at50[4] - at20[4]) as f64 / 30.0;
    assert!(
        (inside / before - 18.0 / 17.0).abs() < 0.01,
        "{before} {inside}"
    );
    for t in [10.0, 20.0, 20.5, 35.0, 50.0, 50.25, 80.0] {
        let total = s.field(Dev::Gpu(0), TX, t).unwrap();
        assert_eq!(
            per_link(&mut s, 0, TX, 18, t).iter().sum::<u64>(),
            total,
            "t = {t}"
        );
    }
}

#[test]
fn per_link_counters_only_grow_and_ignore_query_order() {
    let faults = "[[faults]]\nat = 12.5\ngpu = 0\nkind = \"nvlink_down\"\nlink = 0\nuntil = \
                  31.7\n[[faults]]\nat = 20\ngpu = 0\nkind = \"nvlink_down\"\nlink = 9\n";
    let mut a = busy("B200-SXM-180GB", faults);
    let mut b = busy("B200-SXM-180GB", faults);
    let times: Vec<f64> = (0..200).map(|k| f64::from(k) * 0.29).collect();
    let mut last = vec![0u64; 18];
    for t in &times {
        let v = per_link(&mut a, 0, RX, 18, *t);
        for (l, (now, before)) in v.iter().zip(&last).enumerate() {
            assert!(now >= before, "link {l} went from {before} to {now} at {t}");
        }
        last = v;
    }
    for t in times.iter().rev() {
        assert_eq!(
            per_link(&mut b, 0, RX, 18, *t),
            per_link(&mut a, 0, RX, 18, *t)
        );
    }
}

#[test]
fn every_link_down_stops_the_traffic() {
    let mut faults = String::new();
    for l in 0..18 {
        faults.push_str(&format!(
            "[[faults]]\nat = 20\ngpu = 0\nkind = \"nvlink_down\"\nlink = {l}\nuntil = 40\n"
        ));
    }
    let mut s = busy("GB200", &faults);
    let at20 = s.field(Dev::Gpu(0), TX, 20.0).unwrap();
    assert_eq!(s.field(Dev::Gpu(0), TX, 39.5), Ok(at20));
    assert!(s.field(Dev::Gpu(0), TX, 45.0).unwrap() > at20);
    assert_eq!(
        per_link(&mut s, 0, TX, 18, 39.5),
        per_link(&mut s, 0, TX, 18, 20.0)
    );
    for t in [30.0, 45.0] {
        let total = s.field(Dev::Gpu(0), TX, t).unwrap();
        assert_eq!(per_link(&mut s, 0, TX, 18, t).iter().sum::<u64>(), total);
    }
}

#[test]
fn errors_rise_on_one_link() {
    let mut s = busy(
        "H200-SXM5-141GB",
        "[[faults]]\nat = 15\ngpu = 0\nkind = \"nvlink_errors\"\nlink = 11\ncrc_flit = 25\n\
         repeat = 3\nevery = 10\n",
    );
    let crc = |s: &Sim, l: u32, t: f64| s.nvlink_errors(Dev::Gpu(0), l, 2, t).unwrap();
    assert_eq!(
        [
            crc(&s, 11, 14.0),
            crc(&s, 11, 15.0),
            crc(&s, 11, 25.0),
            crc(&s, 11, 40.0)
        ],
        [0, 25, 50, 75]
    );
    assert_eq!(crc(&s, 10, 40.0), 0);
    // The GPU total (field 38) counts them too.
    let total = s.field(
        Dev::Gpu(0),
        NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL,
        40.0,
    );
    assert_eq!(total, Ok(75));
}

#[test]
fn fabric_registration() {
    let s = Sim::new(load("h100-mig").unwrap(), 1, Some(0.0));
    let f = s.fabric(Dev::Gpu(0), 10.0).unwrap();
    assert_eq!((f.state, f.status, f.health_summary), (3, 0, 1));
    assert_eq!(f.health_mask, 426);
    assert_ne!(f.cluster_uuid, [0; 16]);
    assert!(f.clique_id > 0);
    // One cluster and clique for the node, whatever the seed; another scenario, another one.
    let other_seed = Sim::new(load("h100-mig").unwrap(), 9, Some(0.0));
    assert_eq!(other_seed.fabric(Dev::Gpu(7), 10.0), Ok(f));
    let incidents = Sim::new(load("incidents").unwrap(), 1, Some(0.0));
    assert_ne!(
        incidents.fabric(Dev::Gpu(0), 10.0).unwrap().cluster_uuid,
        f.cluster_uuid
    );
    let mig = s.mig_devices(2, 10.0)[0];
    assert_eq!(s.fabric(Dev::Mig(2, mig), 10.0), Err(ret::NOT_SUPPORTED));
    let a = Sim::new(load("a100-l4").unwrap(), 1, Some(0.0));
    assert_eq!(a.fabric(Dev::Gpu(0), 10.0), Err(ret::NOT_SUPPORTED));
    assert_eq!(a.fabric(Dev::Gpu(1), 10.0), Err(ret::NOT_SUPPORTED));
}

#[test]
fn fabric_faults_change_the_registration_in_their_window() {
    let s = busy(
        "GB200",
        "[[faults]]\nat = 20\ngpu = 0\nkind = \"fabric\"\nhealth = \"limited_capacity\"\n\
         until = 40\n[[faults]]\nat = 60\ngpu = 0\nkind = \"fabric\"\nstatus = 999\n\
         [[faults]]\nat = 80\ngpu = 0\nkind = \"fabric\"\nstate = \"in_progress\"\n\
         health = \"unhealthy\"\n",
    );
    let healthy = s.fabric(Dev::Gpu(0), 19.9).unwrap();
    let f = s.fabric(Dev::Gpu(0), 20.0).unwrap();
    assert_eq!((f.state, f.status, f.health_summary), (3, 0, 3));
    assert_eq!(f.health_mask & 0b11, 1, "degraded bandwidth");
    assert_eq!(
        (f.cluster_uuid, f.clique_id),
        (healthy.cluster_uuid, healthy.clique_id)
    );
    assert_eq!(s.fabric(Dev::Gpu(0), 40.0), Ok(healthy));
    // A failed registration: no cluster, no clique, no health.
    let f = s.fabric(Dev::Gpu(0), 60.0).unwrap();
    assert_eq!(
        (f.state, f.status, f.health_summary, f.health_mask),
        (3, 999, 0, 0)
    );
    assert_eq!((f.cluster_uuid, f.clique_id), ([0; 16], 0));
    let f = s.fabric(Dev::Gpu(0), 80.0).unwrap();
    assert_eq!((f.state, f.status, f.health_summary), (2, 0, 2));
    assert_eq!(f.cluster_uuid, [0; 16]);
}

#[test]
fn builtin_hgx_h200_faults_on_the_timeline() {
    let mut s = Sim::new(load("hgx-h200").unwrap(), 1, Some(0.0));
    assert_eq!(s.scenario.gpus.len(), 8);
    assert!(
        s.scenario
            .gpus
            .iter()
            .all(|g| g.model.key == "H200-SXM5-141GB")
    );
    // GPU 3: link 7 down from 20 s, for good; retrains and replays at 19 s.
    assert_eq!(s.nvlink_state(Dev::Gpu(3), 7, 19.9), Ok(true));
    assert_eq!(s.nvlink_state(Dev::Gpu(3), 7, 20.0), Ok(false));
    assert_eq!(s.nvlink_state(Dev::Gpu(3), 7, 3600.0), Ok(false));
    assert_eq!(s.nvlink_errors(Dev::Gpu(3), 7, 1, 19.0), Ok(3));
    assert_eq!(s.nvlink_errors(Dev::Gpu(3), 7, 0, 19.0), Ok(40));
    let at30 = s.field_scoped(Dev::Gpu(3), TX, 7, 30.0).unwrap();
    assert_eq!(s.field_scoped(Dev::Gpu(3), TX, 7, 60.0), Ok(at30));
    assert!(s.field_scoped(Dev::Gpu(3), TX, 6, 60.0).unwrap() > at30);
    // GPU 5: link 11 gains 12 CRC flit errors every 5 s from 15 s; its other links none.
    let crc = |s: &Sim, l: u32, t: f64| s.nvlink_errors(Dev::Gpu(5), l, 2, t).unwrap();
    assert_eq!(
        [crc(&s, 11, 14.9), crc(&s, 11, 15.0), crc(&s, 11, 60.0)],
        [0, 12, 120]
    );
    assert_eq!(crc(&s, 10, 60.0), 0);
    assert_eq!(s.nvlink_state(Dev::Gpu(5), 11, 60.0), Ok(true));
    for g in 0..8 {
        assert_eq!(s.fabric(Dev::Gpu(g), 60.0).map(|f| f.health_summary), Ok(1));
    }
}

#[test]
fn builtin_gb200_tray_degrades_its_fabric() {
    let s = Sim::new(load("gb200-nvl72").unwrap(), 1, Some(0.0));
    assert_eq!(s.scenario.gpus.len(), crate::model::GB200_GPUS_PER_TRAY);
    assert!(s.scenario.gpus.iter().all(|g| g.model.key == "GB200"));
    let summary = |g: usize, t: f64| s.fabric(Dev::Gpu(g), t).unwrap().health_summary;
    assert_eq!(
        [
            summary(2, 29.9),
            summary(2, 30.0),
            summary(2, 299.9),
            summary(2, 300.0)
        ],
        [1, 3, 3, 1]
    );
    assert_eq!(summary(1, 100.0), 1);
    assert_eq!(s.nvlink_state(Dev::Gpu(2), 14, 100.0), Ok(false));
    assert_eq!(s.nvlink_state(Dev::Gpu(2), 14, 300.0), Ok(true));
    // One NVL72 fabric: the same cluster and clique on every GPU of the tray.
    let ids: Vec<([u8; 16], u32)> = (0..4)
        .map(|g| {
            s.fabric(Dev::Gpu(g), 10.0)
                .map(|f| (f.cluster_uuid, f.clique_id))
                .unwrap()
        })
        .collect();
    assert!(ids.iter().all(|i| *i == ids[0]));
}

#[test]
fn builtin_b200_and_l40s() {
    let mut s = Sim::new(load("hgx-b200").unwrap(), 1, Some(0.0));
    assert_eq!(s.scenario.gpus.len(), 8);
    assert_eq!(s.mig_devices(7, 10.0).len(), 3);
    assert_eq!(s.nvlink_errors(Dev::Gpu(0), 17, 4, 10.0), Ok(0));
    let total = s.field(Dev::Gpu(0), RX, 60.0).unwrap();
    assert_eq!(per_link(&mut s, 0, RX, 18, 60.0).iter().sum::<u64>(), total);
    assert_eq!(s.fabric(Dev::Gpu(7), 10.0).map(|f| f.state), Ok(3));
    let s = Sim::new(load("l40s").unwrap(), 1, Some(0.0));
    assert_eq!(s.scenario.gpus.len(), 4);
    for g in 0..4 {
        assert_eq!(
            s.nvlink_state(Dev::Gpu(g), 0, 10.0),
            Err(ret::NOT_SUPPORTED)
        );
        assert_eq!(s.fabric(Dev::Gpu(g), 10.0), Err(ret::NOT_SUPPORTED));
    }
}

#[test]
fn nvlink_5_counts_symbol_errors_per_link() {
    use nvml_wrapper_sys::bindings::field_id::{
        NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_ERRORS as EFFECTIVE,
        NVML_FI_DEV_NVLINK_COUNT_SYMBOL_ERRORS as SYMBOL,
    };
    let mut s = busy("B200-SXM-180GB", "");
    let early = per_link(&mut s, 0, SYMBOL, 18, 60.0);
    let late = per_link(&mut s, 0, SYMBOL, 18, 600.0);
    assert!(late.iter().all(|v| *v > 0), "{late:?}");
    assert!(early.iter().zip(&late).all(|(a, b)| a <= b));
    assert!(
        late.iter().zip(&early).any(|(b, a)| b > a),
        "they grow with traffic"
    );
    assert_eq!(per_link(&mut s, 0, EFFECTIVE, 18, 600.0), vec![0; 18]);
    assert_eq!(
        s.field_scoped(Dev::Gpu(0), SYMBOL, 18, 60.0),
        Err(ret::INVALID_ARGUMENT)
    );
    // NVLink 4 (Hopper) and earlier do not count them.
    let mut h = busy("H100-SXM5-80GB", "");
    assert_eq!(
        h.field_scoped(Dev::Gpu(0), SYMBOL, 0, 60.0),
        Err(ret::NOT_SUPPORTED)
    );
}

#[test]
fn nvlink_5_totals_are_the_sum_of_the_links() {
    let mut s = busy(
        "B200-SXM-180GB",
        "[[faults]]\nat = 10\ngpu = 0\nkind = \"nvlink_errors\"\nlink = 2\nrecovery = 3\n",
    );
    let t = 300.0;
    // Symbol errors, bytes, packets and recoveries: scope UINT_MAX is every link summed.
    for id in [221, 202, 204, 201, 203, 213, 215, 219, 214, 235, 250] {
        let links: u64 = per_link(&mut s, 0, id, 18, t).iter().sum();
        let all = s.field_scoped(Dev::Gpu(0), id, SCOPE_ALL_LINKS, t).unwrap();
        assert_eq!(all, links, "field {id}");
    }
    let tx_kib: u64 = per_link(&mut s, 0, TX, 18, t).iter().sum();
    let tx_bytes = s
        .field_scoped(Dev::Gpu(0), 202, SCOPE_ALL_LINKS, t)
        .unwrap();
    assert_eq!(
        tx_bytes,
        tx_kib * 1024,
        "bytes are the throughput counter's KiB"
    );
    assert!(tx_bytes > 0);
    assert_eq!(
        s.field_scoped(Dev::Gpu(0), 201, SCOPE_ALL_LINKS, t),
        Ok(tx_bytes / 256)
    );
    // Recoveries come from the fault, on its link only.
    let rec = per_link(&mut s, 0, 215, 18, t);
    assert!(rec[2] > 0 && rec.iter().enumerate().all(|(l, v)| l == 2 || *v == 0));
    // Bit error rates, encoded: about 1.2e-10 symbol BER (1 × 10^-10), no effective BER.
    assert_eq!(
        s.field_scoped(Dev::Gpu(0), 222, SCOPE_ALL_LINKS, t),
        Ok((1 << 8) | 10)
    );
    assert_eq!(s.field_scoped(Dev::Gpu(0), 222, 3, t), Ok((1 << 8) | 10));
    assert_eq!(
        s.field_scoped(Dev::Gpu(0), 220, SCOPE_ALL_LINKS, t),
        Ok((15 << 8) | 255)
    );
    // The NVLink ECC total is served from Hopper on, by summing the links' ECC counters.
    assert_eq!(s.field_scoped(Dev::Gpu(0), 160, 0, t), Ok(0));
    let mut h = busy("H100-SXM5-80GB", "");
    assert_eq!(h.field_scoped(Dev::Gpu(0), 160, 0, t), Ok(0));
    assert_eq!(
        h.field_scoped(Dev::Gpu(0), 202, SCOPE_ALL_LINKS, t),
        Err(ret::NOT_SUPPORTED)
    );
    let mut l = busy("L4", "");
    assert_eq!(
        l.field_scoped(Dev::Gpu(0), 160, 0, t),
        Err(ret::NOT_SUPPORTED)
    );
}

#[test]
fn errors_left_after_fec_raise_the_effective_ber() {
    let fault = "[[faults]]\nat = 10\ngpu = 0\nkind = \"nvlink_errors\"\nlink = 4\n\
                 effective = 50\nrepeat = 1000\nevery = 5\n";
    let mut s = busy("B200-SXM-180GB", fault);
    let effective = per_link(&mut s, 0, 219, 18, 120.0);
    assert_eq!(effective[4], 50 * 23, "23 bumps from 10 s to 120 s");
    assert!(effective.iter().enumerate().all(|(l, v)| l == 4 || *v == 0));
    // Link 4: 1,150 errors over the bits it carried; the others: NVML's zero code.
    let ber = per_link(&mut s, 0, 220, 18, 120.0);
    let (mantissa, exponent) = ((ber[4] >> 8) & 0xf, ber[4] & 0xff);
    let rate = mantissa as f64 * 10f64.powi(-(exponent as i32));
    assert!(rate > 1e-12 && rate < 1e-9, "{mantissa}e-{exponent}");
    assert_eq!(ber[0], (15 << 8) | 255);
    // NVLink 4 has no such counter: the scenario is refused, naming the GPU and the model.
    let text = format!("[[gpus]]\nmodel = \"H100-SXM5-80GB\"\n{fault}");
    let e = parse(&text, "test", "test").unwrap_err().to_string();
    assert!(e.contains("GPU 0") && e.contains("needs NVLink 5"), "{e}");
}
