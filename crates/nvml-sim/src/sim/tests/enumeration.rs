//! Tests of which GPUs NVML enumerates over time through `Sim`: GPUs that appear late, and
//! GPUs unbound and bound again. Without the C ABI: they must not touch the global state (the
//! ABI tests in `ffi` own it).

use super::*;

/// An unbound GPU is not enumerated during its window and is back, the same GPU, after it;
/// while a GPU before others is away, they move down one index and back up after.
#[test]
fn gpus_unbound_and_bound_again() {
    let sc = parse(
        "[[gpus]]\nmodel = \"L4\"\n[[gpus]]\nmodel = \"L4\"\n\
         [[faults]]\nat = 10\nuntil = 20\ngpu = 1\nkind = \"unbind\"\nminor = 5\n",
        "test",
        "test",
    )
    .unwrap();
    assert_eq!(sc.gpus[1].minor_at(19.0), 1);
    assert_eq!(
        sc.gpus[1].minor_at(20.0),
        5,
        "back with its new minor number"
    );
    let s = Sim::new(sc, 1, Some(0.0));
    let uuid1 = s.uuid(Dev::Gpu(1)).unwrap();
    assert_eq!(s.device_count(9.9), 2);
    assert_eq!(s.device_count(10.0), 1);
    assert_eq!(s.handle_by_index(1, 15.0), Err(ret::INVALID_ARGUMENT));
    assert_eq!(s.handle_by_uuid(&uuid1, 15.0), Err(ret::NOT_FOUND));
    assert_eq!(
        s.check(Dev::Gpu(1), "nvmlDeviceGetName", 15.0),
        Err(ret::INVALID_ARGUMENT)
    );
    assert_eq!(s.device_count(20.0), 2);
    assert_eq!(s.handle_by_uuid(&uuid1, 20.0), Ok(Dev::Gpu(1)));
    assert_eq!(s.nvml_index(1, 20.0), 1);

    let first = parse(
        "[[gpus]]\nmodel = \"L4\"\n[[gpus]]\nmodel = \"L4\"\n[[gpus]]\nmodel = \"L4\"\n\
         [[faults]]\nat = 10\nuntil = 20\ngpu = 0\nkind = \"unbind\"\n",
        "test",
        "test",
    )
    .unwrap();
    let s = Sim::new(first, 1, Some(0.0));
    assert_eq!(s.handle_by_index(0, 9.9), Ok(Dev::Gpu(0)));
    assert_eq!(s.nvml_index(2, 9.9), 2);
    // GPU 0 away: the others are indices 0 and 1.
    assert_eq!(s.device_count(15.0), 2);
    assert_eq!(s.handle_by_index(0, 15.0), Ok(Dev::Gpu(1)));
    assert_eq!(s.handle_by_index(1, 15.0), Ok(Dev::Gpu(2)));
    assert_eq!(s.handle_by_index(2, 15.0), Err(ret::INVALID_ARGUMENT));
    assert_eq!(s.nvml_index(1, 15.0), 0);
    assert_eq!(s.nvml_index(2, 15.0), 1);
    // Back: every GPU at its old index.
    assert_eq!(s.handle_by_index(0, 20.0), Ok(Dev::Gpu(0)));
    assert_eq!(s.nvml_index(2, 20.0), 2);
}

#[test]
fn gpus_appearing_later() {
    let sc = parse(
        r#"
        [[gpus]]
        model = "L4"
        [[gpus]]
        model = "L4"
        [[gpus]]
        model = "L4"
        [[faults]]
        at = 30
        gpu = 1
        kind = "appear"
        [[faults]]
        at = 40
        gpu = 2
        kind = "appear"
        "#,
        "test",
        "test",
    )
    .unwrap();
    let s = Sim::new(sc, 1, Some(0.0));
    let uuid1 = s.uuid(Dev::Gpu(1)).unwrap();
    let pci1 = s.physical(Dev::Gpu(1)).unwrap().pci.bus_id();
    assert_eq!(s.device_count(0.0), 1);
    assert_eq!(s.device_count(29.9), 1);
    assert_eq!(s.handle_by_index(0, 0.0), Ok(Dev::Gpu(0)));
    assert_eq!(s.handle_by_index(1, 29.9), Err(ret::INVALID_ARGUMENT));
    assert_eq!(s.handle_by_index(2, 29.9), Err(ret::INVALID_ARGUMENT));
    assert_eq!(s.handle_by_uuid(&uuid1, 29.9), Err(ret::NOT_FOUND));
    assert_eq!(s.handle_by_pci(&pci1, 29.9), Err(ret::NOT_FOUND));
    // Nor does a handle forged from its index work.
    assert_eq!(
        s.check(Dev::Gpu(1), "nvmlDeviceGetName", 29.9),
        Err(ret::INVALID_ARGUMENT)
    );
    assert_eq!(s.device_count(30.0), 2);
    assert_eq!(s.handle_by_index(1, 30.0), Ok(Dev::Gpu(1)));
    assert_eq!(s.handle_by_uuid(&uuid1, 30.0), Ok(Dev::Gpu(1)));
    assert_eq!(s.handle_by_pci(&pci1, 30.0), Ok(Dev::Gpu(1)));
    assert_eq!(s.handle_by_index(2, 35.0), Err(ret::INVALID_ARGUMENT));
    assert_eq!(s.device_count(40.0), 3);
    assert_eq!(s.handle_by_index(2, 40.0), Ok(Dev::Gpu(2)));
    assert_eq!(s.handle_by_index(3, 40.0), Err(ret::INVALID_ARGUMENT));
}
