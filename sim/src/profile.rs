//! State profiles: how many cycles the NIC's two transport engines spent in each state.
//!
//! A profile is counted by the C++ shim from the engines' state registers (the TX scheduler's
//! `TxsState`, the RX engine's `RxState`), one count per engine per cycle, with no port or
//! register added to the RTL; the names come from the generated Verilog of the same build. It is
//! how a message-rate run shows where its cycles go (docs/performance.md): e.g. a 64-byte WRITE
//! on the requester is `NextWqe`, `ActOnChecks`, `RecordWqe`, `IssuePacket` per WQE.

include!(concat!(env!("OUT_DIR"), "/state_names.rs"));

/// Cycles per state code of the TX scheduler (`tx`) and the RX engine (`rx`) of one NIC, since
/// [`crate::Nic::start_state_profile`]. Codes are the state encodings (the order the variants are
/// declared in `hdl/src/tx_scheduler.rs` and `hdl/src/rx_engine.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateProfile {
    /// Cycles the TX scheduler spent in state code `k`.
    pub tx: [u64; 64],
    /// Cycles the RX engine spent in state code `k`.
    pub rx: [u64; 64],
}

/// One state's share of a profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateCount {
    /// The state's code (its encoding in the RTL).
    pub code: u8,
    /// The variant's name (`NextWqe`), or `code N` for a code no variant has.
    pub name: String,
    /// Cycles spent in it.
    pub cycles: u64,
}

impl StateProfile {
    /// Cycles counted (the same for both engines: one count each per cycle).
    pub fn cycles(&self) -> u64 {
        self.tx.iter().sum()
    }

    /// The TX scheduler's states with at least one cycle, most cycles first.
    pub fn tx_states(&self) -> Vec<StateCount> {
        ranked(&self.tx, &TX_STATE_NAMES)
    }

    /// The RX engine's states with at least one cycle, most cycles first.
    pub fn rx_states(&self) -> Vec<StateCount> {
        ranked(&self.rx, &RX_STATE_NAMES)
    }
}

/// The name of TX scheduler state `code` in this build's RTL (`None`: no variant has it).
pub fn tx_state_name(code: u8) -> Option<&'static str> {
    TX_STATE_NAMES.get(usize::from(code)).copied().filter(|n| !n.is_empty())
}

/// The name of RX engine state `code` in this build's RTL (`None`: no variant has it).
pub fn rx_state_name(code: u8) -> Option<&'static str> {
    RX_STATE_NAMES.get(usize::from(code)).copied().filter(|n| !n.is_empty())
}

fn ranked(counts: &[u64; 64], names: &[&str; 64]) -> Vec<StateCount> {
    let mut v: Vec<StateCount> = counts
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(k, &cycles)| StateCount {
            code: k as u8,
            name: if names[k].is_empty() { format!("code {k}") } else { names[k].to_string() },
            cycles,
        })
        .collect();
    v.sort_by(|a, b| b.cycles.cmp(&a.cycles).then(a.code.cmp(&b.code)));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_rtl() {
        assert_eq!(tx_state_name(0), Some("Idle"));
        assert_eq!(rx_state_name(0), Some("Idle"));
        assert!(TX_STATE_NAMES.contains(&"NextWqe"), "{TX_STATE_NAMES:?}");
        assert!(RX_STATE_NAMES.contains(&"WriteBack"), "{RX_STATE_NAMES:?}");
    }

    #[test]
    fn ranked_sorts_by_cycles_and_names_unknown_codes() {
        let mut p = StateProfile { tx: [0; 64], rx: [0; 64] };
        p.tx[0] = 5;
        p.tx[63] = 9;
        let t = p.tx_states();
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].code, t[0].cycles), (63, 9));
        assert_eq!(t[0].name, tx_state_name(63).map_or("code 63".to_string(), str::to_string));
        assert_eq!((t[1].name.as_str(), t[1].cycles), ("Idle", 5));
        assert_eq!(p.cycles(), 14);
        assert!(p.rx_states().is_empty());
    }
}
