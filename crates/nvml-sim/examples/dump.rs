//! Prints what the simulator reports for a scenario at some scenario times, without the C
//! ABI: `cargo run -p nvml-sim --example dump -- [scenario] [seed] [t...]`.
//! A quick way to look at a scenario while editing it.

use std::process::ExitCode;

use nvml_sim::scenario;
use nvml_sim::sim::{Dev, Sim};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let spec = args.first().map_or("h100-mig", String::as_str);
    let seed = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let mut times: Vec<f64> = args.iter().skip(2).filter_map(|s| s.parse().ok()).collect();
    if times.is_empty() {
        times = vec![0.0, 60.0, 150.0];
    }
    let sc = match scenario::load(spec) {
        Ok(sc) => sc,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut sim = Sim::new(sc, seed, Some(0.0));
    println!(
        "scenario {} (node {}), seed {seed}",
        sim.scenario.name, sim.scenario.node
    );
    for t in times {
        println!("--- t = {t} s");
        for g in 0..sim.scenario.gpus.len() {
            let d = Dev::Gpu(g);
            if let Err(code) = sim.check(d, "", t) {
                println!("gpu {g}: error {code}");
                continue;
            }
            let r = sim.readings(d, t);
            let energy = sim.energy_mj(d, t).unwrap_or(0);
            let (_, viol) = sim.violation(d, 0, t).unwrap_or((0, 0));
            let mem = sim.memory(d, t).map(|m| m.used / (1 << 20)).unwrap_or(0);
            if let Ok(r) = r {
                println!(
                    "gpu {g}: util {:>3.0}% power {:>5.1} W (limit {:.0}) temp {:>4.1} C sm {} MHz \
                     mem used {mem} MiB energy {energy} mJ power-capped {:.1} s reasons {:#x}",
                    r.load.graphics * 100.0,
                    r.power_w,
                    r.limit_w,
                    r.temp_c,
                    r.sm_mhz,
                    viol as f64 / 1e9,
                    r.reasons
                );
            }
            for uid in sim.mig_devices(g, t) {
                let m = Dev::Mig(g, uid);
                let name = sim.name(m).unwrap_or_default();
                let (gi, ci) = sim.instance_ids(m).unwrap_or((0, 0));
                let used = sim.memory(m, t).map(|x| x.used / (1 << 20)).unwrap_or(0);
                println!("    gi {gi:>2} ci {ci} {name}: mem used {used} MiB");
            }
        }
    }
    ExitCode::SUCCESS
}
