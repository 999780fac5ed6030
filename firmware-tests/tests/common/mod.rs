//! The two-host harness shared by the end-to-end tests (`e2e_write.rs`, `e2e_send.rs`,
//! `e2e_read.rs`, ...; scatter-list layouts in [`sgl`]): two
//! simulated hosts cabled back to back, each with the Verilated NIC, opened through the `rnic`
//! driver with one PD and one 64-entry CQ, plus the waits and diagnostics the tests use.
#![allow(dead_code)] // each test binary uses its own subset

pub mod carried;
pub mod frames;
pub mod seeds;
pub mod sgl;

use std::cell::RefCell;
use std::rc::Rc;

use rnic::sim::sim_pair;
use rnic::{CompletionQueue, Context, PortAddr, ProtectionDomain, WorkCompletion};
use rnic_sim::{SimConfig, World};

/// Two hosts cabled back to back: A is NIC 0, B is NIC 1.
pub struct Hosts {
    pub world: Rc<RefCell<World>>,
    pub a: Context,
    pub b: Context,
    pub pa: ProtectionDomain,
    pub pb: ProtectionDomain,
    pub ca: CompletionQueue,
    pub cb: CompletionQueue,
}

impl Hosts {
    /// Both hosts on a world built from `cfg` (faults, link), each with a PD and a 64-entry CQ.
    pub fn new(cfg: SimConfig) -> Self {
        let (world, da, db) = sim_pair(cfg).expect("simulated world");
        let a = Context::open_with_port(da, PortAddr::for_sim_nic(0)).expect("open NIC 0");
        let b = Context::open_with_port(db, PortAddr::for_sim_nic(1)).expect("open NIC 1");
        let (pa, pb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
        let (ca, cb) = (a.create_cq(64).unwrap(), b.create_cq(64).unwrap());
        Hosts { world, a, b, pa, pb, ca, cb }
    }

    /// Both NICs' counters (A, B).
    pub fn counters(&self) -> (rnic::Counters, rnic::Counters) {
        (self.a.counters().unwrap(), self.b.counters().unwrap())
    }

    /// The non-zero counters of both NICs, for panic messages.
    pub fn diag(&self) -> String {
        let (ca, cb) = self.counters();
        format!("NIC 0 counters: {:?}\nNIC 1 counters: {:?}", nonzero(&ca), nonzero(&cb))
    }

    /// Polls `cq` until `n` completions arrived, taking no more than `n` (panics after `budget`
    /// cycles, printing the counters of both NICs).
    pub fn wait(&self, cq: &CompletionQueue, n: usize, budget: u64) -> Vec<WorkCompletion> {
        let mut got = Vec::new();
        let mut wcs = [WorkCompletion::default(); 16];
        let start = self.world.borrow().cycles();
        while got.len() < n {
            let k = cq.poll(&mut wcs[..(n - got.len()).min(16)]).unwrap();
            got.extend_from_slice(&wcs[..k]);
            if self.world.borrow().cycles() - start > budget {
                panic!(
                    "CQ {}: {} of {n} completions within {budget} cycles: {got:?}\n{}",
                    cq.cqn(),
                    got.len(),
                    self.diag()
                );
            }
        }
        got
    }

    /// Steps the world until `ctx`'s counter `idx` reaches `at_least`; false after `budget`
    /// cycles.
    pub fn wait_counter(&self, ctx: &Context, idx: u16, at_least: u32, budget: u64) -> bool {
        let start = self.world.borrow().cycles();
        loop {
            if ctx.counter(idx).unwrap() >= at_least {
                return true;
            }
            if self.world.borrow().cycles() - start > budget {
                return false;
            }
            self.world.borrow_mut().step_n(256);
        }
    }

    /// Steps the world `n` cycles.
    pub fn settle(&self, n: u64) {
        self.world.borrow_mut().step_n(n);
    }

    /// Steps the world `n` cycles, then takes every asynchronous event `ctx` has, in order
    /// (`ibv_get_async_event(3)` until none is left).
    pub fn events_after(&self, ctx: &Context, n: u64) -> Vec<rnic::AsyncEvent> {
        self.settle(n);
        std::iter::from_fn(|| ctx.poll_async_event().unwrap()).collect()
    }
}

/// The counters that are not zero, by name.
pub fn nonzero(c: &rnic::Counters) -> Vec<(&'static str, u32)> {
    c.iter().filter(|(_, v)| *v != 0).collect()
}

/// The change of counter `i` between two readings (counters wrap).
pub fn delta(c1: &rnic::Counters, c0: &rnic::Counters, i: u16) -> u32 {
    c1.values[i as usize].wrapping_sub(c0.values[i as usize])
}

/// A byte pattern that differs per offset and per `seed`; every byte is odd, so it never equals
/// a test's even guard byte (0xEE).
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| (i.wrapping_mul(31) ^ (i >> 8).wrapping_mul(7) ^ seed.wrapping_mul(0x9D)) as u8 | 1)
        .collect()
}

/// Cycle budget for one message of `len` bytes: generous slack plus 10× the 100 Gb/s wire time
/// (50 bytes per cycle).
pub fn budget(len: usize) -> u64 {
    300_000 + 10 * len as u64 / 50
}

/// The first index where `got` differs from `want`, described.
pub fn first_difference(got: &[u8], want: &[u8]) -> Option<String> {
    got.iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .map(|i| format!("first wrong byte at {i}: {:#04x}, expected {:#04x}", got[i], want[i]))
}
