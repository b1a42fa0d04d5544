//! Unconfigured embedded start: `dcgmStartEmbedded` reads the scenario from
//! `DCGM_SIM_SCENARIO` and the seed from `DCGM_SIM_SEED`, and a bad seed is refused with an
//! error that names the variable. Its own test binary: the library's configuration is global.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Dcgm;
use dcgm_abi as abi;

#[test]
fn embedded_start_reads_the_scenario_and_seed_from_the_environment() {
    // SAFETY: this test binary has this one test, so no other thread reads the environment.
    unsafe {
        std::env::set_var("DCGM_SIM_SCENARIO", "a100-mig-t4");
        std::env::set_var("DCGM_SIM_SEED", "seven");
    }
    let d = Dcgm::open();
    assert_eq!(d.get_time(), -1.0, "nothing configured yet");
    assert_eq!(d.init(), 0);
    assert_eq!(
        d.start_embedded(abi::DCGM_OPERATION_MODE_AUTO),
        Err(abi::DCGM_ST_INIT_ERROR)
    );
    assert!(
        d.last_error().contains("DCGM_SIM_SEED"),
        "{}",
        d.last_error()
    );
    unsafe { std::env::set_var("DCGM_SIM_SEED", "7") };
    let h = d.start_embedded(abi::DCGM_OPERATION_MODE_AUTO).unwrap();
    assert!(d.get_time() >= 0.0);
    let a = d.attributes(h, 1).unwrap();
    assert_eq!(abi::c_text(&a.identifiers.deviceName), "Tesla T4");
    assert_eq!(d.stop_embedded(h), 0);
    assert_eq!(d.shutdown(), 0);
}
