//! `rnic-tools`: the `rnic` command-line tool of the rnic NIC and what it is made of, as a
//! library so its parts are tested and reusable: [`perf`], perftest-style bandwidth tests
//! between two simulated hosts through the verbs of the `rnic` driver (with its `sim`
//! backend), and [`cli`], the command line with every option's range. The binary (`rnic`,
//! `src/main.rs`) prints their results. See docs/driver.md.
#![warn(missing_docs)]

pub mod cli;
pub mod output;
pub mod perf;
