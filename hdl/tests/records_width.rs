//! Every record's fields add up to the width it declares (`record!(Name, TOTAL, {...})` in
//! `hdl/src/records.rs`), so `From<Bits<TOTAL>>` reads every field inside the word and a RAM or
//! FIFO sized by the declared width holds the whole record. (Not a Verilator test: a layout
//! check that needs none.)
//!
//! - `declared_widths_match_the_fields`: parses every `record!` of `records.rs` and compares the
//!   declared total with the sum of the field widths (records with a known RTL bug excepted).
//! - `tx_job_width_matches_its_fields`: the same for `TxJob`, plus its `From<Bits<320>>` view
//!   (which `debug_assert`s the sum): ignored while the RTL bug stands.
use rnic_hdl::records::TxJob;
use rust_hdl::prelude::*;

/// Records whose declared width is known to be wrong (each has its own ignored test).
const KNOWN_BAD: &[&str] = &["TxJob"];

/// `(name, declared bits, sum of field widths)` of each `record!` in records.rs.
fn records() -> Vec<(String, usize, usize)> {
    let src = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/records.rs"));
    let mut out = Vec::new();
    for block in src.split("record!(").skip(1) {
        // Skip doc comments; the header is `Name, TOTAL, {`.
        let body: String = block
            .lines()
            .filter(|l| !l.trim_start().starts_with("///"))
            .collect::<Vec<_>>()
            .join("\n");
        let open = body.find('{').expect("record without fields");
        let close = body.find('}').expect("record without closing brace");
        let head: Vec<&str> = body[..open].split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
        if head.len() != 2 || head[1].parse::<usize>().is_err() {
            continue; // the macro definition itself
        }
        let sum = body[open + 1..close]
            .split(',')
            .filter_map(|f| f.split_once(':'))
            .map(|(_, w)| w.trim().parse::<usize>().expect("field width"))
            .sum();
        out.push((head[0].to_string(), head[1].parse().unwrap(), sum));
    }
    out
}

#[test]
fn declared_widths_match_the_fields() {
    let all = records();
    assert!(all.len() >= 10, "found only {} records", all.len());
    let bad: Vec<String> = all
        .iter()
        .filter(|(n, d, s)| d != s && !KNOWN_BAD.contains(&n.as_str()))
        .map(|(n, d, s)| format!("{n}: declared {d} bits, fields sum to {s}"))
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // The parse agrees with rust-hdl's own width for a record it knows.
    let tx = all.iter().find(|r| r.0 == "TxJob").expect("TxJob");
    assert_eq!(tx.2, <TxJob as Synth>::BITS);
}

#[test]
fn tx_job_width_matches_its_fields() {
    let all = records();
    let (_, declared, sum) = all.iter().find(|r| r.0 == "TxJob").expect("TxJob").clone();
    assert_eq!(sum, declared, "TxJob: declared {declared} bits, fields sum to {sum}");
    let _ = TxJob::from(Bits::<328>::default());
}
