//! `cargo run --release -p rnic-hdl --example rnic_board_gen -- DIR`: writes the Alveo U250
//! board design (`rnic_u250.v`, top module `top`, with the NIC core inside, and
//! `rnic_crc_cores.v`) into DIR for `constraints/u250/build.tcl`.
use rnic_hdl::board;

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "target/u250/verilog".to_string());
    match board::generate(std::path::Path::new(&dir)) {
        Ok(files) => {
            for f in files {
                println!("{}", f.display());
            }
        }
        Err(e) => {
            eprintln!("rnic_board_gen: cannot write Verilog into {dir}: {e}");
            std::process::exit(1);
        }
    }
}
