//! Every record's fields add up to the width it declares (`record!(Name, TOTAL, {...})` in
//! `hdl/src/records.rs`), so `From<Bits<TOTAL>>` reads every field inside the word and a RAM or
//! FIFO sized by the declared width holds the whole record; and the records the testbenches
//! pack by hand have the layout they rely on. (Not a Verilator test: a layout check that needs
//! none.)
//!
//! - `declared_widths_match_the_fields`: parses every `record!` of `records.rs` and compares the
//!   declared total with the sum of the field widths, and with rust-hdl's own width (`Synth::BITS`)
//!   for the records the block tests drive.
//! - `extension_fields_layout`: `TxJob` is 496 bits with `has_ext4`, `has_atomic_eth`,
//!   `has_atomic_ack`, `se` right after `has_reth` (bits 10..13; `rsp_last` at 14, `psn` still at
//!   bit 16), `ext4` in bits 359..328, the atomic operands after it and `rsp_qpn` last; `RxDesc` is 417 bits with
//!   `imm` in bits 287..256 and the atomic operands after it; `RoceHeader.ext` covers frame
//!   bytes 54..82 (an AtomicETH) and `spare` the last 6 bytes; `InflightRec` is 224 bits with
//!   `local_iova` last; `ReadRespJob` is 360 bits with `len` still ending at bit 288;
//!   `WriteJob` is 640 bits with the 13-bit byte offset `off` at bit 24 (a scattered receive's
//!   piece may start past byte 127 of its packet) and `plen`, `addr`, `cqe`, `ack` where the RX
//!   writer reads them (the top level carries the record whole).
//! - `from_bits_reads_each_field_in_place`: `From<Bits<TOTAL>>` of a word with one field's bits
//!   set yields that field (all ones) and nothing else, for `TxJob` and `RxDesc`.
use rnic_hdl::records::{InflightRec, ReadRespJob, RoceHeader, RxDesc, TxJob, WriteJob};
use rust_hdl::prelude::*;

/// `(name, declared bits, sum of field widths)` of each `record!` in records.rs.
fn records() -> Vec<(String, usize, usize)> {
    let src = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/records.rs"));
    let mut out = Vec::new();
    for block in src.split("record!(").skip(1) {
        // Skip doc comments; the header is `Name, TOTAL, {`.
        let body: String = block.lines().filter(|l| !l.trim_start().starts_with("///")).collect::<Vec<_>>().join("\n");
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

fn declared(all: &[(String, usize, usize)], name: &str) -> usize {
    all.iter().find(|r| r.0 == name).unwrap_or_else(|| panic!("no record {name}")).1
}

#[test]
fn declared_widths_match_the_fields() {
    let all = records();
    assert!(all.len() >= 10, "found only {} records", all.len());
    let bad: Vec<String> = all
        .iter()
        .filter(|(_, d, s)| d != s)
        .map(|(n, d, s)| format!("{n}: declared {d} bits, fields sum to {s}"))
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // The parse agrees with rust-hdl's own width for the records the block tests drive.
    for (name, bits) in [
        ("TxJob", <TxJob as Synth>::BITS),
        ("RxDesc", <RxDesc as Synth>::BITS),
        ("RoceHeader", <RoceHeader as Synth>::BITS),
        ("InflightRec", <InflightRec as Synth>::BITS),
        ("ReadRespJob", <ReadRespJob as Synth>::BITS),
        ("WriteJob", <WriteJob as Synth>::BITS),
    ] {
        assert_eq!(declared(&all, name), bits, "{name}: declared width vs rust-hdl's");
    }
}

#[test]
fn extension_fields_layout() {
    let all = records();
    assert_eq!(declared(&all, "TxJob"), 496);
    assert_eq!(declared(&all, "RxDesc"), 417);
    assert_eq!(declared(&all, "RoceHeader"), 704);
    assert_eq!(declared(&all, "InflightRec"), 224);
    assert_eq!(declared(&all, "ReadRespJob"), 360);

    let t = TxJob::default();
    assert_eq!((t.get_my_offset_has_reth(), t.get_my_width_has_reth()), (9, 1));
    assert_eq!((t.get_my_offset_has_ext4(), t.get_my_width_has_ext4()), (10, 1));
    assert_eq!((t.get_my_offset_has_atomic_eth(), t.get_my_offset_has_atomic_ack()), (11, 12));
    assert_eq!((t.get_my_offset_se(), t.get_my_width_se()), (13, 1));
    assert_eq!((t.get_my_offset_rsp_last(), t.get_my_offset_has_deth()), (14, 15));
    assert_eq!((t.get_my_offset_rsp_qpn(), t.get_my_width_rsp_qpn()), (488, 6));
    assert_eq!(t.get_my_offset_psn(), 16, "TxJob fields after has_deth did not move");
    assert_eq!((t.get_my_offset_ext4(), t.get_my_width_ext4()), (328, 32));
    assert_eq!((t.get_my_offset_at_swap(), t.get_my_offset_at_cmp()), (360, 424));

    let d = RxDesc::default();
    assert_eq!((d.get_my_offset_aeth_msn(), d.get_my_width_aeth_msn()), (232, 24));
    assert_eq!((d.get_my_offset_imm(), d.get_my_width_imm()), (256, 32));
    assert_eq!((d.get_my_offset_at_swap(), d.get_my_offset_at_cmp()), (288, 352));

    // Frame byte k is header bits 8k+7..8k: ext starts at byte 54 and holds 28 bytes.
    let h = RoceHeader::default();
    assert_eq!((h.get_my_offset_ext(), h.get_my_width_ext()), (54 * 8, 28 * 8));
    assert_eq!((h.get_my_offset_spare(), h.get_my_width_spare()), (82 * 8, 6 * 8));

    let i = InflightRec::default();
    assert_eq!((i.get_my_offset_local_iova(), i.get_my_width_local_iova()), (160, 64));

    let r = ReadRespJob::default();
    assert_eq!(r.get_my_offset_len() + r.get_my_width_len(), 288);

    assert_eq!(declared(&all, "WriteJob"), 640);
    let w = WriteJob::default();
    assert_eq!((w.get_my_offset_off(), w.get_my_width_off()), (24, 13));
    assert_eq!((w.get_my_offset_plen(), w.get_my_width_plen()), (40, 13));
    assert_eq!((w.get_my_offset_addr(), w.get_my_offset_cqe(), w.get_my_offset_ack()), (56, 120, 376));
}

/// A word of `N` bits with bits `off..off + w` set.
fn ones_at<const N: usize>(off: usize, w: usize) -> Bits<N> {
    let mut b = Bits::<N>::default();
    for k in off..off + w {
        b = b | (Bits::<N>::from(1u64) << k as u64);
    }
    b
}

#[test]
fn from_bits_reads_each_field_in_place() {
    let t = TxJob::default();
    let j = TxJob::from(ones_at::<496>(t.get_my_offset_ext4(), 32));
    assert_eq!(j.ext4.to_u64(), 0xFFFF_FFFF);
    assert_eq!(j, TxJob { ext4: j.ext4, ..TxJob::default() }, "only ext4 set");
    let j = TxJob::from(ones_at::<496>(t.get_my_offset_has_ext4(), 1));
    assert!(j.has_ext4.any());
    assert_eq!(j, TxJob { has_ext4: j.has_ext4, ..TxJob::default() }, "only has_ext4 set");
    // And back: the record as a word has the field at the same place.
    let word: Bits<496> = TxJob { ext4: 0xA1B2_C3D4u64.to_bits(), ..TxJob::default() }.into();
    assert_eq!(word.get_bits::<32>(328).to_u64(), 0xA1B2_C3D4);

    let d = RxDesc::default();
    let r = RxDesc::from(ones_at::<417>(d.get_my_offset_imm(), 32));
    assert_eq!(r.imm.to_u64(), 0xFFFF_FFFF);
    assert_eq!(r, RxDesc { imm: r.imm, ..RxDesc::default() }, "only imm set");
}
