//! Links `libibverbs.so` with soname `libibverbs.so.1` and the version nodes of rdma-core 44
//! (`IBVERBS_1.0` … `IBVERBS_1.14`, `IBVERBS_PRIVATE_34`, and librdmacm's `RDMACM_1.0` …
//! `RDMACM_1.3`), generated from `libibverbs.symbols` and `librdmacm.symbols`. The symbols themselves get their versions from `.symver` directives
//! in `src/lib.rs` (rustc's own version script would otherwise leave them unversioned).
use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let mut text = String::new();
    for name in ["libibverbs.symbols", "librdmacm.symbols"] {
        let list = dir.join(name);
        println!("cargo:rerun-if-changed={}", list.display());
        text += &std::fs::read_to_string(&list).expect("read the symbol lists");
    }
    let mut versions: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (v, sym) = line.split_once(' ').expect("VERSION name");
        match versions.iter_mut().find(|(n, _)| n == v) {
            Some((_, syms)) => syms.push(sym.to_string()),
            None => versions.push((v.to_string(), vec![sym.to_string()])),
        }
    }
    // The public versions inherit each from the one before, as in libibverbs.map.in and
    // librdmacm.map (each family its own chain).
    let mut map = String::new();
    let mut prev: Option<String> = None;
    let family = |v: &str| ["IBVERBS_1.", "RDMACM_1."].into_iter().find(|f| v.starts_with(f));
    for (v, syms) in &versions {
        let _ = write!(map, "{v} {{\n  global:\n");
        for s in syms {
            let _ = writeln!(map, "    {s};");
        }
        match &prev {
            Some(p) if family(v).is_some() && family(v) == family(p) => {
                let _ = writeln!(map, "}} {p};");
            }
            _ => map.push_str("};\n"),
        }
        if family(v).is_some() {
            prev = Some(v.clone());
        }
    }
    let map_path = out.join("libibverbs.map");
    std::fs::write(&map_path, map).expect("write the version script");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={}", map_path.display());
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libibverbs.so.1");
}
