//! The one notion of a source's health that every background source reports (the kubelet
//! client, the pod and ResourceSlice reflectors, the HPC job directory) and that attribution
//! turns into `gpu_exporter_pod_map_*` self-metrics.
//!
//! Plain data; it must not refresh anything or know how a source works.

/// A source's state, as of its last attempt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Health {
    /// `true` when the last attempt succeeded and the source's data is meaningful.
    pub up: bool,
    /// Unix time of the last success, for sources whose age is worth reporting (`None`: not
    /// reported, or never succeeded).
    pub last_success_unix: Option<f64>,
    /// Failed attempts so far.
    pub errors: u64,
    /// The last failure, while it lasts.
    pub last_error: Option<String>,
}

impl Health {
    /// Seconds since the last success at `now` (never negative).
    pub fn age_seconds(&self, now: f64) -> Option<f64> {
        self.last_success_unix.map(|t| (now - t).max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn age_is_measured_from_the_last_success() {
        let h = Health {
            up: true,
            last_success_unix: Some(100.0),
            ..Health::default()
        };
        assert_eq!(h.age_seconds(103.5), Some(3.5));
        assert_eq!(h.age_seconds(99.0), Some(0.0));
        assert_eq!(Health::default().age_seconds(5.0), None);
    }
}
