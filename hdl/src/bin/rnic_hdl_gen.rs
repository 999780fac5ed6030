//! `rnic-hdl-gen DIR`: writes the NIC's Verilog into DIR and prints the file names.
fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "generated".to_string());
    match rnic_hdl::generate(std::path::Path::new(&dir)) {
        Ok(g) => {
            for s in g.sources {
                println!("{}", s.display());
            }
        }
        Err(e) => {
            eprintln!("rnic-hdl-gen: cannot write Verilog into {dir}: {e}");
            std::process::exit(1);
        }
    }
}
