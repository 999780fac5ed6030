//! `rnic perf … --state-profile`: where the cycles of a bandwidth run went, per state of each
//! NIC's two transport engines (the TX scheduler, `TxsState`, and the RX engine, `RxState`).
//!
//! The simulator counts every cycle of the measured run (from the first post to the last
//! completion) in the state the engine's state register held ([`rnic_sim::profile`]); nothing
//! is added to the RTL. A message-rate run reads off its per-message cost per state: e.g.
//! `NextWqe 1.00` cycles per message at the requester's scheduler.
use rnic::sim::sim_error;
use rnic::Result;
use rnic_sim::{StateCount, StateProfile, World};
use serde::Serialize;

/// One state's cycles in a profile.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StateShare {
    /// The state's name in the RTL (`NextWqe`), or `code N`.
    pub state: String,
    /// Its encoding (the code in the STATUS register's engine-state fields).
    pub code: u8,
    /// Cycles spent in it.
    pub cycles: u64,
    /// `cycles` over the profile's cycles (0 ..= 1).
    pub share: f64,
}

/// The profile of one NIC: cycles counted and, most cycles first, the states of each engine.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NicStates {
    /// Cycles counted (the measured run).
    pub cycles: u64,
    /// The TX scheduler's states (the requester's WQE engine).
    pub tx_scheduler: Vec<StateShare>,
    /// The RX engine's states (responder, completer, CQEs).
    pub rx_engine: Vec<StateShare>,
}

/// Both NICs' profiles.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StateProfiles {
    /// NIC 0, the requester.
    pub client: NicStates,
    /// NIC 1, the responder.
    pub server: NicStates,
}

/// Starts (or restarts) the profiles of NICs 0 and 1.
///
/// # Errors
/// [`rnic::Error::InvalidArgument`] when the simulator's model keeps no state profile.
pub fn start(world: &mut World) -> Result<()> {
    for i in 0..2 {
        world
            .nic_mut(i)
            .and_then(|n| n.start_state_profile())
            .map_err(|e| sim_error(format!("--state-profile on NIC {i}"), e))?;
    }
    Ok(())
}

/// The profiles of NICs 0 and 1 since [`start`] (`None` if it was not called).
pub fn read(world: &World) -> Option<StateProfiles> {
    let nic = |i: usize| world.nic(i).ok().and_then(|n| n.state_profile()).map(|p| nic_states(&p));
    Some(StateProfiles { client: nic(0)?, server: nic(1)? })
}

fn nic_states(p: &StateProfile) -> NicStates {
    let cycles = p.cycles();
    let share = |v: Vec<StateCount>| -> Vec<StateShare> {
        v.into_iter()
            .map(|s| StateShare {
                state: s.name,
                code: s.code,
                cycles: s.cycles,
                share: if cycles == 0 { 0.0 } else { s.cycles as f64 / cycles as f64 },
            })
            .collect()
    };
    NicStates { cycles, tx_scheduler: share(p.tx_states()), rx_engine: share(p.rx_states()) }
}

/// The table `rnic perf` prints: for each NIC and engine, its `top` busiest states with their
/// share of the run and their cycles per message (`messages`: the run's messages).
pub fn lines(p: &StateProfiles, messages: u64, top: usize) -> Vec<String> {
    let mut out = vec![format!(" state profile ({} cycles; cycles per message of {messages}):", p.client.cycles)];
    for (who, n) in [("client", &p.client), ("server", &p.server)] {
        for (engine, states) in [("TX scheduler", &n.tx_scheduler), ("RX engine", &n.rx_engine)] {
            let cells: Vec<String> = states
                .iter()
                .take(top)
                .map(|s| {
                    format!("{} {:.1} % ({:.2})", s.state, 100.0 * s.share, s.cycles as f64 / messages.max(1) as f64)
                })
                .collect();
            out.push(format!("  {who} {engine}: {}", cells.join(", ")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_and_lines_follow_the_counts() {
        let mut p = StateProfile { tx: [0; 64], rx: [0; 64] };
        p.tx[0] = 30;
        p.tx[1] = 10;
        p.rx[0] = 40;
        let n = nic_states(&p);
        assert_eq!(n.cycles, 40);
        assert_eq!(n.tx_scheduler.len(), 2);
        assert_eq!((n.tx_scheduler[0].code, n.tx_scheduler[0].share), (0, 0.75));
        assert_eq!(n.tx_scheduler[0].state, "Idle");
        let both = StateProfiles { client: n.clone(), server: n };
        let l = lines(&both, 10, 1);
        assert_eq!(l.len(), 5);
        assert_eq!(l[1], "  client TX scheduler: Idle 75.0 % (3.00)");
        assert_eq!(l[2], "  client RX engine: Idle 100.0 % (4.00)");
    }
}
