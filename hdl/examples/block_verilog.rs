//! `cargo run -p rnic-hdl --example block_verilog -- BLOCK DIR`: writes one block of the core
//! alone (module `top`, plus the CRC cores) into DIR, so `scripts/synth.sh --verilog DIR`
//! reports that block's resources and logic depth. The block's ports start and end paths
//! there, so cross-block paths need the full core (`scripts/synth.sh`).
use rnic_hdl::*;
use rust_hdl::prelude::*;

fn write<B: Block>(mut block: B, dir: &std::path::Path) -> std::io::Result<()> {
    block.connect_all();
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("block.v"), generate_verilog(&block))?;
    crc::write_cores(dir)?;
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(name), Some(dir)) = (args.first(), args.get(1)) else {
        eprintln!("usage: block_verilog BLOCK DIR  (BLOCK: dma_read, tx_scheduler, rx_engine, rx_writer, ack_timer, byte_counters)");
        std::process::exit(2);
    };
    let dir = std::path::Path::new(dir);
    let r = match name.as_str() {
        "dma_read" => write(dma_read::DmaReadIssuer::default(), dir),
        "tx_scheduler" => write(tx_scheduler::TxScheduler::default(), dir),
        "rx_engine" => write(rx_engine::RxEngine::default(), dir),
        "rx_writer" => write(rx_writer::RxWriter::default(), dir),
        "ack_timer" => write(ack_timer::AckTimer::default(), dir),
        "byte_counters" => write(byte_counters::ByteCounters::default(), dir),
        other => {
            eprintln!("block_verilog: unknown block '{other}'");
            std::process::exit(2);
        }
    };
    if let Err(e) = r {
        eprintln!("block_verilog: cannot write into {}: {e}", dir.display());
        std::process::exit(1);
    }
}
