//! `dcgm-sim-hostengine`: the stand-in for `nv-hostengine` that answers the simulated
//! `libdcgm` in remote mode. It parses its flags (in nv-hostengine's spirit), loads the
//! scenario as the NVML simulator does, and serves (`dcgm_sim::server`) in the foreground until
//! it is killed. It owns flag parsing only.

use std::path::PathBuf;

use dcgm_sim::engine::Engine;
use dcgm_sim::server::{self, Listen};

const USAGE: &str = "usage: dcgm-sim-hostengine [--scenario NAME|PATH] [--seed N] \
[-p|--port PORT] [--bind-ip ADDR] [--domain-socket PATH] [-n|--no-daemon]";

struct Flags {
    scenario: String,
    seed: u64,
    listen: Listen,
}

fn value(args: &mut impl Iterator<Item = String>, flag: &str) -> Result<String, String> {
    args.next().ok_or_else(|| format!("{flag} needs a value"))
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Flags, String> {
    let mut scenario = nvml_sim::builtin::DEFAULT.to_string();
    let mut seed = nvml_sim::state::DEFAULT_SEED;
    let (mut port, mut ip, mut socket) = (None, None, None);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--scenario" => scenario = value(&mut args, &a)?,
            "--seed" => {
                let v = value(&mut args, &a)?;
                seed = v
                    .parse()
                    .map_err(|_| format!("--seed {v}: not an unsigned integer"))?;
            }
            "-p" | "--port" => {
                let v = value(&mut args, &a)?;
                port = Some(
                    v.parse::<u16>()
                        .map_err(|_| format!("{a} {v}: not a port number"))?,
                );
            }
            "--bind-ip" => ip = Some(value(&mut args, &a)?),
            "--domain-socket" => socket = Some(PathBuf::from(value(&mut args, &a)?)),
            "-n" | "--no-daemon" => {}
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown flag {other}\n{USAGE}")),
        }
    }
    let listen = match (socket, port, ip) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err("--domain-socket cannot go with --port or --bind-ip".to_string());
        }
        (Some(path), None, None) => Listen::Unix(path),
        (None, port, ip) => Listen::Tcp(
            ip.unwrap_or_else(|| "127.0.0.1".to_string()),
            port.unwrap_or(dcgm_sim::remote::DEFAULT_PORT),
        ),
    };
    Ok(Flags {
        scenario,
        seed,
        listen,
    })
}

fn main() {
    let flags = match parse(std::env::args().skip(1)) {
        Ok(f) => f,
        Err(msg) => {
            eprintln!("dcgm-sim-hostengine: {msg}");
            std::process::exit(2);
        }
    };
    let sc = match nvml_sim::scenario::load(&flags.scenario) {
        Ok(sc) => sc,
        Err(e) => {
            eprintln!("dcgm-sim-hostengine: --scenario: {e}");
            std::process::exit(1);
        }
    };
    let engine = Engine::new(sc, flags.seed, None);
    let result = server::serve(engine, &flags.listen, |bound| {
        println!("dcgm-sim-hostengine: listening on {bound}");
    });
    if let Err(e) = result {
        eprintln!("dcgm-sim-hostengine: {e}");
        std::process::exit(1);
    }
}
