//! libefa.so.1 with the EFA_1.x version nodes perftest 4.5 binds to.
#[path = "../build-common.rs"]
mod common;

fn main() {
    common::link("libefa.so.1", &["EFA_1.0", "EFA_1.1"]);
}
