//! Tests of the NVLink and fabric faults (`nvlink_down`, `nvlink_errors` with `link`,
//! `fabric`): what they resolve to and every validation error, which must name the key.
//! Parsing only: what NVML answers from these is tested in `sim`.

use super::{parse_err, parse_ok};
use crate::scenario::{Counter, FabricHealth};

/// One GPU of `model` with one fault of `kind` at 10 s and `keys`.
fn fault(model: &str, kind: &str, keys: &str) -> String {
    format!(
        "[[gpus]]\nmodel = \"{model}\"\n[[faults]]\nat = 10\ngpu = 0\nkind = \"{kind}\"\n{keys}"
    )
}

#[test]
fn nvlink_down_takes_one_link_down_for_its_window() {
    let s = parse_ok(&fault(
        "H200-SXM5-141GB",
        "nvlink_down",
        "link = 5\nuntil = 40\n",
    ));
    let g = &s.gpus[0];
    let all = (1u32 << 18) - 1;
    assert_eq!(g.links_up(9.9), all);
    assert_eq!(g.links_up(10.0), all & !(1 << 5));
    assert!(!g.link_up(5, 39.9) && g.link_up(4, 20.0) && g.link_up(5, 40.0));
    assert!(
        !g.link_up(18, 0.0),
        "a link the model does not have is never up"
    );
    assert!(g.carries_nvlink(20.0));
    assert_eq!(g.link_breaks(), vec![10.0, 40.0]);
    // Without `until` the link stays down.
    let s = parse_ok(&fault("B200-SXM-180GB", "nvlink_down", "link = 17\n"));
    assert!(!s.gpus[0].link_up(17, 1e9));
    assert_eq!(s.gpus[0].link_breaks(), vec![10.0]);
    // Every link down: no NVLink traffic at all.
    let mut text = "[[gpus]]\nmodel = \"A100-SXM4-40GB\"\n".to_string();
    for l in 0..12 {
        text.push_str(&format!(
            "[[faults]]\nat = 0\ngpu = 0\nkind = \"nvlink_down\"\nlink = {l}\nuntil = 30\n"
        ));
    }
    let s = parse_ok(&text);
    assert!(!s.gpus[0].carries_nvlink(10.0) && s.gpus[0].carries_nvlink(30.0));
    assert_eq!(s.gpus[0].link_breaks(), vec![30.0]);
}

#[test]
fn nvlink_down_validation_names_the_key_and_the_model() {
    let e = parse_err(&fault("H100-SXM5-80GB", "nvlink_down", ""));
    assert!(e.contains("an \"nvlink_down\" fault needs `link`"), "{e}");
    let e = parse_err(&fault("H100-SXM5-80GB", "nvlink_down", "link = 18\n"));
    assert!(
        e.contains(
            "line 7: nvlink_down fault: link = 18 on GPU 0, but model H100-SXM5-80GB has 18 \
             NVLink links (0..17)"
        ),
        "{e}"
    );
    let e = parse_err(&fault("A100-SXM4-40GB", "nvlink_down", "link = 12\n"));
    assert!(
        e.contains("model A100-SXM4-40GB has 12 NVLink links"),
        "{e}"
    );
    let e = parse_err(&fault("L40S", "nvlink_down", "link = 0\n"));
    assert!(e.contains("GPU 0: model L40S has no NVLink"), "{e}");
    let e = parse_err(&fault(
        "H200-SXM5-141GB",
        "nvlink_down",
        "link = 1\nreplay = 3\n",
    ));
    assert!(
        e.contains("`replay` does not apply to a \"nvlink_down\" fault"),
        "{e}"
    );
    let e = parse_err(&fault(
        "H200-SXM5-141GB",
        "nvlink_down",
        "link = 1\nuntil = 5\n",
    ));
    assert!(e.contains("until = 5 must be later than at = 10"), "{e}");
    let e = parse_err(&fault("H200-SXM5-141GB", "nvlink_down", "link = -1\n"));
    assert!(e.contains("line 7"), "{e}");
}

#[test]
fn nvlink_errors_on_one_link_or_spread() {
    let s = parse_ok(&fault(
        "H200-SXM5-141GB",
        "nvlink_errors",
        "link = 3\ncrc_flit = 40\nrecovery = 2\n",
    ));
    let g = &s.gpus[0];
    assert_eq!(g.link_counter(Counter::NvlinkCrcFlit, 3, 10.0), 40);
    assert_eq!(g.link_counter(Counter::NvlinkCrcFlit, 3, 9.9), 0);
    assert_eq!(g.link_counter(Counter::NvlinkCrcFlit, 4, 10.0), 0);
    assert_eq!(g.link_counter(Counter::NvlinkRecovery, 3, 10.0), 2);
    // The GPU totals (fields 38 … 59) are what they were.
    assert_eq!(g.counter(Counter::NvlinkCrcFlit, 10.0), 40);
    // Without `link` the counts spread over every link and still add up to the total.
    let s = parse_ok(&fault(
        "H100-SXM5-80GB",
        "nvlink_errors",
        "crc_flit = 40\nreplay = 6\n",
    ));
    let g = &s.gpus[0];
    let per_link: Vec<u64> = (0..18)
        .map(|l| g.link_counter(Counter::NvlinkCrcFlit, l, 10.0))
        .collect();
    assert_eq!(per_link.iter().sum::<u64>(), 40);
    assert_eq!(&per_link[..5], &[3, 3, 3, 3, 2]);
    assert_eq!(g.link_counter(Counter::NvlinkReplay, 0, 10.0), 1);
    assert_eq!(g.link_counter(Counter::NvlinkReplay, 6, 10.0), 0);
    assert_eq!(g.counter(Counter::NvlinkCrcFlit, 10.0), 40);
}

#[test]
fn nvlink_errors_rise_with_repeat() {
    let s = parse_ok(&fault(
        "H200-SXM5-141GB",
        "nvlink_errors",
        "link = 7\ncrc_data = 5\nrepeat = 4\nevery = 10\n",
    ));
    let g = &s.gpus[0];
    let at = |t: f64| g.link_counter(Counter::NvlinkCrcData, 7, t);
    assert_eq!(
        [at(9.0), at(10.0), at(19.9), at(20.0), at(40.0), at(1e6)],
        [0, 5, 5, 10, 20, 20]
    );
    assert_eq!(g.counter(Counter::NvlinkCrcData, 45.0), 20);
}

#[test]
fn nvlink_errors_validation() {
    let e = parse_err(&fault(
        "H100-SXM5-80GB",
        "nvlink_errors",
        "link = 20\nreplay = 1\n",
    ));
    assert!(
        e.contains("nvlink_errors fault: link = 20 on GPU 0, but model H100-SXM5-80GB has 18"),
        "{e}"
    );
    let e = parse_err(&fault("L4", "nvlink_errors", "link = 0\nreplay = 1\n"));
    assert!(e.contains("model L4 has no NVLink"), "{e}");
    let e = parse_err(&fault("H100-SXM5-80GB", "nvlink_errors", "link = 1\n"));
    assert!(
        e.contains("needs crc_flit, crc_data, replay, recovery or effective"),
        "{e}"
    );
    let e = parse_err(&fault(
        "H100-SXM5-80GB",
        "nvlink_errors",
        "replay = 1\nrepeat = 0\n",
    ));
    assert!(e.contains("repeat = 0 is outside 1..10000"), "{e}");
    let e = parse_err(&fault(
        "H100-SXM5-80GB",
        "nvlink_errors",
        "replay = 1\nuntil = 20\n",
    ));
    assert!(
        e.contains("`until` does not apply to a \"nvlink_errors\""),
        "{e}"
    );
}

#[test]
fn fabric_faults_override_their_parts_in_their_window() {
    let text = format!(
        "{}until = 60\n[[faults]]\nat = 30\ngpu = 0\nkind = \"fabric\"\nstate = \
         \"completed\"\nstatus = 999\nuntil = 40\n",
        fault("GB200", "fabric", "health = \"limited_capacity\"\n")
    );
    let s = parse_ok(&text);
    let g = &s.gpus[0];
    assert!(g.fabric_at(9.9).is_none());
    let f = g.fabric_at(10.0).unwrap();
    assert_eq!(
        (f.state, f.status, f.health),
        (None, None, Some(FabricHealth::LimitedCapacity))
    );
    // The later-starting fault wins where both hold.
    let f = g.fabric_at(35.0).unwrap();
    assert_eq!((f.state, f.status, f.health), (Some(3), Some(999), None));
    assert_eq!(
        g.fabric_at(45.0).map(|f| f.health),
        Some(Some(FabricHealth::LimitedCapacity))
    );
    assert!(g.fabric_at(60.0).is_none());
    let s = parse_ok(&fault(
        "H100-SXM5-80GB",
        "fabric",
        "state = \"in_progress\"\n",
    ));
    assert_eq!(s.gpus[0].fabric_at(1e9).and_then(|f| f.state), Some(2));
    let s = parse_ok(&fault(
        "B200-SXM-180GB",
        "fabric",
        "health = \"unhealthy\"\n",
    ));
    assert_eq!(
        s.gpus[0].fabric_at(11.0).and_then(|f| f.health),
        Some(FabricHealth::Unhealthy)
    );
}

#[test]
fn fabric_validation_names_the_key() {
    let e = parse_err(&fault("L40S", "fabric", "health = \"unhealthy\"\n"));
    assert!(
        e.contains(
            "GPU 0: model L40S has no NVSwitch fabric (fabric faults apply to H100-SXM5-80GB, \
             H200-SXM5-141GB, B200-SXM-180GB, GB200)"
        ),
        "{e}"
    );
    let e = parse_err(&fault(
        "A100-SXM4-40GB",
        "fabric",
        "state = \"completed\"\n",
    ));
    assert!(
        e.contains("model A100-SXM4-40GB has no NVSwitch fabric"),
        "{e}"
    );
    let e = parse_err(&fault("GB200", "fabric", ""));
    assert!(
        e.contains("a \"fabric\" fault needs state, status or health"),
        "{e}"
    );
    let e = parse_err(&fault("GB200", "fabric", "state = \"done\"\n"));
    assert!(
        e.contains(
            "line 7: state = \"done\" is not a fabric state (expected not_started, in_progress, \
             completed)"
        ),
        "{e}"
    );
    let e = parse_err(&fault("GB200", "fabric", "health = \"degraded\"\n"));
    assert!(
        e.contains(
            "line 7: health = \"degraded\" is not a fabric health (expected healthy, unhealthy, \
             limited_capacity)"
        ),
        "{e}"
    );
    let e = parse_err(&fault("GB200", "fabric", "status = 500\n"));
    assert!(
        e.contains("line 7: status = 500 is not an NVML return code"),
        "{e}"
    );
    let e = parse_err(&fault(
        "GB200",
        "fabric",
        "health = \"healthy\"\nlink = 2\n",
    ));
    assert!(
        e.contains("`link` does not apply to a \"fabric\" fault"),
        "{e}"
    );
}
