//! `-s/--switch-devices` as a selection of NVSwitches and their ports, in the grammar of
//! `-d/--devices` (`selection_grammar`): `f` every switch and every up port; `g` every switch,
//! `g:LIST` the switches with those DCGM ids; `i` every port, `i:LIST` the ports with those
//! indices on each chosen switch, `i:S.P` (or `S.P-Q`) ports of switch S only. Each axis
//! narrows on its own: a value with no `g` item keeps every switch, one with no `i` item
//! every up port of the chosen switches.
//!
//! Pure data and parsing; it must not know which switches exist (the DCGM client compares the
//! selection with what its hostengine lists, and says what it names that is not there).

use super::selection_grammar::{DeviceSpecError, Item, SYNTAX_BOUNDS, parse_items};

/// Inclusive ranges of ids.
type Ranges = Vec<(u32, u32)>;

/// The switches and ports `-s/--switch-devices` chooses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwitchSelection {
    /// The switch ids `g:LIST` names; `None`: every switch.
    switches: Option<Ranges>,
    /// The port indices `i:LIST` names (on every chosen switch); `None`: every up port
    /// (unless `pairs` narrows them).
    ports: Option<Ranges>,
    /// `i:S.P-Q` items: (switch, first port, last port).
    pairs: Vec<(u32, u32, u32)>,
}

fn within(ranges: &[(u32, u32)], id: u32) -> bool {
    ranges.iter().any(|(a, b)| *a <= id && id <= *b)
}

impl SwitchSelection {
    /// Parses a `-s/--switch-devices` value; `flag` names the flag in error messages.
    pub fn parse(flag: &str, value: &str) -> Result<Self, DeviceSpecError> {
        let (mut all_switches, mut all_ports) = (false, false);
        let (mut switches, mut ports, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
        let (mut any_g, mut any_i) = (false, false);
        parse_items(flag, value, SYNTAX_BOUNDS, |item| match item {
            Item::Flex => (all_switches, all_ports) = (true, true),
            Item::AllGpus => (all_switches, any_g) = (true, true),
            Item::Gpus(a, b) => {
                any_g = true;
                switches.push((a, b));
            }
            Item::AllInstances => (all_ports, any_i) = (true, true),
            Item::InstancesOn(a, b) => {
                any_i = true;
                ports.push((a, b));
            }
            Item::Instances(r) => {
                any_i = true;
                pairs.push((r.gpu, r.first, r.last));
            }
        })?;
        let narrowed = |all: bool, any: bool| !all && any;
        Ok(Self {
            switches: narrowed(all_switches, any_g).then_some(switches),
            ports: narrowed(all_ports, any_i).then_some(ports),
            pairs: if narrowed(all_ports, any_i) {
                pairs
            } else {
                Vec::new()
            },
        })
    }

    /// Whether every switch and every up port is chosen (`f`, the default).
    pub fn is_all(&self) -> bool {
        self.switches.is_none() && self.ports.is_none()
    }

    /// Whether switch `id` is chosen (an `i:S.P` item chooses switch S too).
    pub fn wants_switch(&self, id: u32) -> bool {
        match &self.switches {
            None => true,
            Some(r) => within(r, id) || self.pairs.iter().any(|(s, ..)| *s == id),
        }
    }

    /// Whether port `port` of switch `switch` is chosen.
    pub fn wants_port(&self, switch: u32, port: u32) -> bool {
        if !self.wants_switch(switch) {
            return false;
        }
        match &self.ports {
            None => true,
            Some(r) => {
                within(r, port)
                    || self
                        .pairs
                        .iter()
                        .any(|(s, a, b)| *s == switch && *a <= port && port <= *b)
            }
        }
    }

    /// The switch ids named (`g:LIST`, `i:S.P`) that are not in `listed`, at most `max` of
    /// them (a range is walked no further than that).
    pub fn switches_missing(&self, listed: &[u32], max: usize) -> Vec<u32> {
        let named = self.switches.iter().flatten().copied();
        let named = named.chain(self.pairs.iter().map(|(s, ..)| (*s, *s)));
        let mut out: Vec<u32> = named
            .flat_map(|(a, b)| (a..=b).take(max))
            .filter(|id| !listed.contains(id))
            .collect();
        out.sort_unstable();
        out.dedup();
        out.truncate(max);
        out
    }

    /// The port indices named (`i:LIST`, `i:S.P`) that no chosen switch has up (`up`: the
    /// (switch, port) pairs up), at most `max` of them.
    pub fn ports_missing(&self, up: &[(u32, u32)], max: usize) -> Vec<u32> {
        let named = self.ports.iter().flatten().map(|(a, b)| (None, *a, *b));
        let named = named.chain(self.pairs.iter().map(|(s, a, b)| (Some(*s), *a, *b)));
        let mut out: Vec<u32> = named
            .flat_map(|(s, a, b)| (a..=b).take(max).map(move |p| (s, p)))
            .filter(|(s, p)| {
                !up.iter()
                    .any(|(us, up)| up == p && s.is_none_or(|s| s == *us) && self.wants_switch(*us))
            })
            .map(|(_, p)| p)
            .collect();
        out.sort_unstable();
        out.dedup();
        out.truncate(max);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(v: &str) -> SwitchSelection {
        SwitchSelection::parse("-s/--switch-devices", v).unwrap()
    }

    #[test]
    fn each_axis_narrows_on_its_own() {
        assert!(sel("f").is_all());
        assert!(sel("g,i").is_all());
        let g = sel("g:1,3");
        assert!(g.wants_switch(1) && g.wants_switch(3) && !g.wants_switch(2));
        assert!(g.wants_port(1, 39) && !g.wants_port(2, 0));
        let i = sel("i:0-3");
        assert!(i.wants_switch(2) && i.wants_port(2, 3) && !i.wants_port(2, 4));
        let pair = sel("g:0,i:2.5-6");
        assert!(pair.wants_switch(0) && pair.wants_switch(2) && !pair.wants_switch(1));
        assert!(pair.wants_port(2, 6) && !pair.wants_port(2, 7) && !pair.wants_port(0, 5));
        assert_eq!(g.switches_missing(&[0, 1, 2], 8), vec![3]);
        let up = [(0, 0), (0, 1), (1, 0)];
        assert_eq!(sel("i:1-2").ports_missing(&up, 8), vec![2]);
        assert_eq!(sel("g:1,i:1").ports_missing(&up, 8), vec![1]);
        assert_eq!(
            sel("g:0-4000000000").switches_missing(&[0], 4),
            vec![1, 2, 3]
        );
        assert!(SwitchSelection::parse("-s/--switch-devices", "q").is_err());
    }
}
