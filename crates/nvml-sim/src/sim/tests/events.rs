//! Tests of the timeline's events through `Sim`: event sets, their registration and each
//! set's cursor (every event once, after registration, at a cost that does not grow with the
//! timeline). Without the C ABI: they must not touch the global state (the ABI tests in `ffi`
//! own it).

use super::*;

#[test]
fn events_with_repeats_and_per_set_cursors() {
    let mut s = h100(1);
    let a = s.event_set_create();
    let b = s.event_set_create();
    for g in 0..8 {
        s.register_events(
            Dev::Gpu(g),
            u64::from(nvmlEventTypeXidCriticalError),
            a,
            0.0,
        )
        .unwrap();
    }
    s.register_events(
        Dev::Gpu(3),
        u64::from(nvmlEventTypeXidCriticalError),
        b,
        0.0,
    )
    .unwrap();
    assert_eq!(s.next_event(a, 39.0), Ok(None));
    let e = s.next_event(a, 75.0).unwrap().unwrap();
    assert_eq!((e.gpu, e.data, e.gi), (1, 31, NO_INSTANCE));
    let mut xids = Vec::new();
    while let Some(e) = s.next_event(a, 75.0).unwrap() {
        xids.push((e.gpu, e.data));
    }
    assert_eq!(xids, vec![(3, 48), (3, 48), (3, 48)]);
    // Set b only sees GPU 3, and sees all three repeats itself.
    let mut b_xids = Vec::new();
    while let Some(e) = s.next_event(b, 75.0).unwrap() {
        b_xids.push(e.data);
    }
    assert_eq!(b_xids, vec![48, 48, 48]);
    // GPU 7 lost at 120 s: Xid 79.
    let e = s.next_event(a, 130.0).unwrap().unwrap();
    assert_eq!((e.gpu, e.data), (7, 79));
    assert_eq!(s.next_event(a, 1000.0), Ok(None));
    // Unsupported masks and MIG devices are refused.
    assert_eq!(
        s.register_events(Dev::Gpu(0), 1 << 40, a, 0.0),
        Err(ret::NOT_SUPPORTED)
    );
    assert_eq!(
        s.register_events(Dev::Mig(2, 0), 8, a, 0.0),
        Err(ret::NOT_SUPPORTED)
    );
    assert_eq!(s.event_set_free(a), Ok(()));
    assert_eq!(s.next_event(a, 1.0), Err(ret::INVALID_ARGUMENT));
}

/// (GPU, data, time) of every event the set gets up to `t`, draining it.
fn drain(s: &mut Sim, set: u64, t: f64) -> Vec<(usize, u64, f64)> {
    let mut out = Vec::new();
    while let Some(e) = s.next_event(set, t).unwrap() {
        out.push((e.gpu, e.data, e.t));
    }
    out
}

#[test]
fn events_only_after_registration() {
    let xid = u64::from(nvmlEventTypeXidCriticalError);
    let mut s = h100(1);
    // Xid 48 on GPU 3 at 60, 65 and 70 s: a set registered at 62 misses the first one.
    let late = s.event_set_create();
    s.register_events(Dev::Gpu(3), xid, late, 62.0).unwrap();
    assert_eq!(
        drain(&mut s, late, 75.0),
        vec![(3, 48, 65.0), (3, 48, 70.0)]
    );
    // A set registered at 0 sees all three, once.
    let early = s.event_set_create();
    s.register_events(Dev::Gpu(3), xid, early, 0.0).unwrap();
    assert_eq!(
        drain(&mut s, early, 75.0),
        vec![(3, 48, 60.0), (3, 48, 65.0), (3, 48, 70.0)]
    );
    assert_eq!(drain(&mut s, early, 75.0), vec![]);
    // An event exactly at the registration time counts as before it.
    let at = s.event_set_create();
    s.register_events(Dev::Gpu(3), xid, at, 65.0).unwrap();
    assert_eq!(drain(&mut s, at, 75.0), vec![(3, 48, 70.0)]);
    // Registering another GPU later skips only that GPU's past events; registering more
    // types for a GPU already on the set does not skip anything.
    let mixed = s.event_set_create();
    s.register_events(Dev::Gpu(3), xid, mixed, 0.0).unwrap();
    s.register_events(Dev::Gpu(1), xid, mixed, 50.0).unwrap();
    s.register_events(Dev::Gpu(3), SUPPORTED_EVENTS, mixed, 68.0)
        .unwrap();
    let got = drain(&mut s, mixed, 75.0);
    assert!(
        got.iter().all(|e| e.0 == 3),
        "Xid 31 at 40 s is before GPU 1 joined: {got:?}"
    );
    assert_eq!(got.iter().filter(|e| e.1 == 48).count(), 3, "{got:?}");
    // The double-bit ECC events at 60, 65, 70 s (data 0) all come, 60 and 65 included.
    assert_eq!(got.iter().filter(|e| e.1 == 0).count(), 3, "{got:?}");
    // A later event of a GPU registered late still comes (GPU 7 lost at 120 s: Xid 79).
    s.register_events(Dev::Gpu(7), xid, mixed, 100.0).unwrap();
    assert_eq!(drain(&mut s, mixed, 130.0), vec![(7, 79, 120.0)]);
}

#[test]
fn xid_burst_sub_second() {
    let sc = parse(
        "[[gpus]]\nmodel = \"L4\"\n[[faults]]\nat = 10\ngpu = 0\nkind = \"xid\"\nxid = 13\nrepeat = 20\nevery = 0.05\n",
        "test",
        "test",
    )
    .unwrap();
    let mut s = Sim::new(sc, 1, Some(0.0));
    let set = s.event_set_create();
    s.register_events(
        Dev::Gpu(0),
        u64::from(nvmlEventTypeXidCriticalError),
        set,
        5.0,
    )
    .unwrap();
    assert_eq!(drain(&mut s, set, 9.99), vec![]);
    let got = drain(&mut s, set, 11.0);
    assert_eq!(got.len(), 20);
    assert!(got.iter().all(|e| e.0 == 0 && e.1 == 13));
    assert!(got.windows(2).all(|w| w[1].2 > w[0].2));
    assert!((got[19].2 - 10.95).abs() < 1e-9, "{got:?}");
    assert_eq!(drain(&mut s, set, 100.0), vec![]);
}

/// A flood of Xids costs the same per event however long the timeline is: each call looks at
/// the events after the last one it delivered, never again from the start. 5,000 Xids on GPU
/// 0, interleaved with double-bit ECC events of GPU 0 (a type the set asks for only later)
/// and Xids of GPU 1 (registered only later): each Xid of GPU 0 is delivered after looking at
/// a bounded number of events; the ECC events passed over are owed once the set adds their
/// type; GPU 1's events before its registration never are.
#[test]
fn event_delivery_does_not_rescan_the_timeline() {
    let sc = parse(
        "[[gpus]]\nmodel = \"L4\"\n[[gpus]]\nmodel = \"L4\"\n\
         [[faults]]\nat = 1\ngpu = 0\nkind = \"xid\"\nxid = 13\nrepeat = 5000\nevery = 0.001\n\
         [[faults]]\nat = 1.0005\ngpu = 0\nkind = \"ecc\"\ndbe = 1\n\
         [[faults]]\nat = 2.0005\ngpu = 0\nkind = \"ecc\"\ndbe = 1\n\
         [[faults]]\nat = 3.0005\ngpu = 0\nkind = \"ecc\"\ndbe = 1\n\
         [[faults]]\nat = 1.0002\ngpu = 1\nkind = \"xid\"\nxid = 31\nrepeat = 2000\nevery = 0.001\n",
        "test",
        "test",
    )
    .unwrap();
    let mut s = Sim::new(sc, 1, Some(0.0));
    let total = s.scenario.events.len();
    let set = s.event_set_create();
    let xid = u64::from(nvmlEventTypeXidCriticalError);
    s.register_events(Dev::Gpu(0), xid, set, 0.0).unwrap();
    let mut got = 0;
    let mut last_cursor = 0;
    while let Some(e) = s.next_event(set, 7.0).unwrap() {
        assert_eq!((e.gpu, e.data), (0, 13));
        got += 1;
        let cursor = s.event_sets[&set].cursor;
        // Between two of GPU 0's Xids (1 ms apart) lie at most one Xid of GPU 1 and one ECC
        // event: three events looked at, whatever the position in the timeline.
        assert!(
            cursor - last_cursor <= 3,
            "{last_cursor} -> {cursor} at Xid {got}"
        );
        last_cursor = cursor;
    }
    assert_eq!(got, 5000);
    assert_eq!(s.next_event(set, 7.0), Ok(None));
    assert!(s.event_sets[&set].cursor <= total);
    // The ECC events of GPU 0 were passed over, not lost: owed once the set asks for them.
    s.register_events(
        Dev::Gpu(0),
        u64::from(nvmlEventTypeDoubleBitEccError),
        set,
        7.0,
    )
    .unwrap();
    let ecc: Vec<f64> = std::iter::from_fn(|| s.next_event(set, 7.0).unwrap())
        .map(|e| e.t)
        .collect();
    assert_eq!(ecc.len(), 3, "{ecc:?}");
    assert!(ecc.windows(2).all(|w| w[1] > w[0]));
    // GPU 1 registered at 7 s: its Xids before then are never delivered.
    s.register_events(Dev::Gpu(1), xid, set, 7.0).unwrap();
    assert_eq!(s.next_event(set, 100.0), Ok(None));
}

/// The census file follows every event set and GPM sample made and freed, so a test can tell a
/// caller that frees what it makes from one that leaks.
#[test]
fn the_census_counts_live_event_sets_and_samples() {
    let path = std::env::temp_dir().join(format!("nvml-sim-census-{}", std::process::id()));
    let read = || std::fs::read_to_string(&path).unwrap();
    let mut s = h100(1);
    s.census = Some(path.clone());
    let a = s.event_set_create();
    let b = s.event_set_create();
    assert_eq!(read(), "event_sets 2\ngpm_samples 0\n");
    let x = s.sample_alloc();
    s.sample_alloc();
    s.event_set_free(a).unwrap();
    assert_eq!(read(), "event_sets 1\ngpm_samples 2\n");
    s.sample_free(x).unwrap();
    s.event_set_free(b).unwrap();
    assert_eq!(read(), "event_sets 0\ngpm_samples 1\n");
    // A free of what does not exist changes nothing.
    assert_eq!(s.event_set_free(b), Err(ret::INVALID_ARGUMENT));
    assert_eq!(read(), "event_sets 0\ngpm_samples 1\n");
    std::fs::remove_file(&path).unwrap();
}
