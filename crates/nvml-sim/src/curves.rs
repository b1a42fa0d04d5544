//! Deterministic signals: seeded hashing, smooth value noise and the activity curve of each
//! workload kind (idle, training, inference, bursty).
//!
//! Everything here is a pure function of (key, time): no state, no clock, no randomness from
//! the environment. `physics` derives every reading from these curves.

use std::f64::consts::TAU;

/// Mixes two 64-bit words into one (splitmix64 finaliser over a xor-rotate combine).
pub fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.rotate_left(25) ^ 0x9E37_79B9_7F4A_7C15;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Hashes a list of words into one key.
pub fn key(parts: &[u64]) -> u64 {
    parts
        .iter()
        .fold(0x6E76_6D6C_5F73_696D, |acc, p| mix(acc, *p))
}

/// Hashes a string into a word (FNV-1a, then mixed).
pub fn hash_str(s: &str) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    mix(h, 0)
}

/// Uniform value in [0, 1) for lattice point `i` of stream `key`.
pub fn unit(key: u64, i: i64) -> f64 {
    let bits = mix(key, i as u64) >> 11;
    bits as f64 / (1u64 << 53) as f64
}

/// Uniform value in [-1, 1) for lattice point `i` of stream `key`.
pub fn signed(key: u64, i: i64) -> f64 {
    unit(key, i) * 2.0 - 1.0
}

/// Hermite smoothstep of `x` between `e0` and `e1`, clamped to [0, 1].
pub fn smoothstep(e0: f64, e1: f64, x: f64) -> f64 {
    if e1 <= e0 {
        return if x < e0 { 0.0 } else { 1.0 };
    }
    let s = ((x - e0) / (e1 - e0)).clamp(0.0, 1.0);
    s * s * (3.0 - 2.0 * s)
}

/// Smooth value noise in [-1, 1]: random knots at integer `x`, smoothstep in between.
pub fn smooth_noise(key: u64, x: f64) -> f64 {
    let i = x.floor();
    let f = x - i;
    let i = i as i64;
    let a = signed(key, i);
    let b = signed(key, i.wrapping_add(1));
    let s = f * f * (3.0 - 2.0 * f);
    a + (b - a) * s
}

/// Fractional part in [0, 1).
pub fn frac(x: f64) -> f64 {
    x - x.floor()
}

/// A flat-topped pulse over `s` in [0, 1]: 0 at the ends, 1 in the middle, smooth edges that
/// take `edge` of the width on each side.
fn plateau(s: f64, edge: f64) -> f64 {
    if !(0.0..=1.0).contains(&s) {
        return 0.0;
    }
    smoothstep(0.0, edge, s) * (1.0 - smoothstep(1.0 - edge, 1.0, s))
}

/// What a workload does on a GPU or a MIG instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Nothing runs: 0 % utilization, a few MiB of framebuffer.
    Idle,
    /// Long data-parallel training: high steady load, slow wander, checkpoint dips once per
    /// period, heavy NVLink traffic.
    Training,
    /// Online inference: request-driven load following a sine over the period plus noise.
    Inference,
    /// Batch bursts: one burst of `duty` of each period at a seeded offset, idle otherwise.
    Bursty,
}

impl Kind {
    /// Parses a scenario `kind` string.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "idle" => Some(Self::Idle),
            "training" => Some(Self::Training),
            "inference" => Some(Self::Inference),
            "bursty" => Some(Self::Bursty),
            _ => None,
        }
    }

    /// The scenario spelling.
    pub fn name(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Training => "training",
            Self::Inference => "inference",
            Self::Bursty => "bursty",
        }
    }

    /// Default (level, amplitude, period s, duty, memory fraction) of the kind.
    pub fn defaults(self) -> (f64, f64, f64, f64, f64) {
        match self {
            Self::Idle => (0.0, 0.0, 60.0, 0.0, 0.0),
            Self::Training => (0.88, 0.08, 600.0, 0.0, 0.85),
            Self::Inference => (0.45, 0.25, 300.0, 0.0, 0.55),
            Self::Bursty => (0.92, 0.0, 120.0, 0.3, 0.5),
        }
    }
}

/// A resolved workload: kind plus parameters, all validated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Workload {
    pub kind: Kind,
    /// Base (training/inference) or peak (bursty) activity, 0..1.
    pub level: f64,
    /// Swing around the level, 0..1.
    pub amplitude: f64,
    /// Characteristic period, seconds.
    pub period: f64,
    /// Bursty only: fraction of each period spent in the burst.
    pub duty: f64,
    /// Fraction of the framebuffer the workload holds.
    pub memory: f64,
    /// Video decode load relative to activity (decoder utilization), 0..1.
    pub video: f64,
}

impl Workload {
    /// An idle workload.
    pub const IDLE: Workload = Workload {
        kind: Kind::Idle,
        level: 0.0,
        amplitude: 0.0,
        period: 60.0,
        duty: 0.0,
        memory: 0.0,
        video: 0.0,
    };

    /// Activity in [0, 1] at time `t` for the noise stream `key`.
    pub fn activity(&self, key: u64, t: f64) -> f64 {
        let a = match self.kind {
            Kind::Idle => 0.0,
            Kind::Training => {
                let wander = self.amplitude * smooth_noise(mix(key, 1), t / (self.period * 0.25));
                let jitter = 0.015 * smooth_noise(mix(key, 2), t / 2.0);
                let base = self.level + wander + jitter;
                // A checkpoint once per period: ~4 % of the period (at least 8 s).
                let width = (8.0 / self.period).clamp(0.04, 0.5);
                let phase = frac(t / self.period + unit(key, 3));
                let dip = plateau(phase / width, 0.2);
                base * (1.0 - dip) + 0.12 * dip
            }
            Kind::Inference => {
                let phase = unit(key, 4) * TAU;
                let wave = (TAU * t / self.period + phase).sin();
                let requests = smooth_noise(mix(key, 5), t / 15.0);
                let jitter = smooth_noise(mix(key, 6), t / 2.0);
                self.level + self.amplitude * (wave + 0.35 * requests) + 0.02 * jitter
            }
            Kind::Bursty => {
                let window = (t / self.period).floor();
                let p = t / self.period - window;
                let start = unit(key, window as i64) * (1.0 - self.duty);
                let s = if self.duty > 0.0 {
                    (p - start) / self.duty
                } else {
                    -1.0
                };
                let edge = (3.0 / (self.duty * self.period).max(1e-9)).min(0.25);
                let on = plateau(s, edge);
                let jitter = 0.02 * smooth_noise(mix(key, 7), t / 3.0);
                (self.level + jitter) * on
            }
        };
        a.clamp(0.0, 1.0)
    }

    /// Framebuffer fraction in use at `t`: stable per workload with a slow ±1–3 % drift.
    pub fn memory_fraction(&self, key: u64, t: f64) -> f64 {
        let drift = match self.kind {
            Kind::Idle => 0.0,
            Kind::Training => 0.01,
            Kind::Inference | Kind::Bursty => 0.03,
        };
        (self.memory * (1.0 + drift * smooth_noise(mix(key, 8), t / 120.0))).clamp(0.0, 0.98)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(kind: Kind) -> Workload {
        let (level, amplitude, period, duty, memory) = kind.defaults();
        Workload {
            kind,
            level,
            amplitude,
            period,
            duty,
            memory,
            video: 0.0,
        }
    }

    #[test]
    fn noise_is_deterministic_and_bounded() {
        for i in 0..1000 {
            let x = f64::from(i) * 0.37 - 50.0;
            let a = smooth_noise(42, x);
            assert_eq!(a, smooth_noise(42, x));
            assert!((-1.0..=1.0).contains(&a));
        }
        assert_ne!(smooth_noise(1, 0.5), smooth_noise(2, 0.5));
    }

    #[test]
    fn noise_is_continuous() {
        for i in 0..200 {
            let x = f64::from(i) * 0.5;
            let d = (smooth_noise(7, x + 1e-7) - smooth_noise(7, x)).abs();
            assert!(d < 1e-5, "jump at {x}: {d}");
        }
    }

    #[test]
    fn activity_ranges_per_kind() {
        let train = workload(Kind::Training);
        let mean: f64 = (0..600)
            .map(|s| train.activity(9, f64::from(s)))
            .sum::<f64>()
            / 600.0;
        assert!(mean > 0.7, "training mean {mean}");
        let idle = workload(Kind::Idle);
        assert_eq!(idle.activity(9, 123.0), 0.0);
        let bursty = workload(Kind::Bursty);
        let on = (0..1200)
            .filter(|s| bursty.activity(9, f64::from(*s)) > 0.5)
            .count();
        assert!((200..=500).contains(&on), "bursty on for {on} s of 1200");
        let inf = workload(Kind::Inference);
        for s in 0..1000 {
            let a = inf.activity(3, f64::from(s));
            assert!((0.0..=1.0).contains(&a));
        }
    }

    #[test]
    fn kinds_round_trip() {
        for k in [Kind::Idle, Kind::Training, Kind::Inference, Kind::Bursty] {
            assert_eq!(Kind::parse(k.name()), Some(k));
        }
        assert_eq!(Kind::parse("gaming"), None);
    }
}
