//! Renders the contract as Markdown (`docs/contract.md`), so the documentation is produced from
//! the same definitions the RTL and the driver use. A test fails when the committed file is
//! stale; `RNIC_BLESS=1 cargo test -p rnic-contract` rewrites it.
use crate::{cq_context, cqe, mr_entry, qp_context, recv_wqe, regs, srq_context, wqe, Field};
use std::fmt::Write;

/// One row of the register table (a `|` in the name escaped for Markdown).
fn reg_row(o: &mut String, off: u16, name: &str, acc: &str) {
    let name = name.replace('|', "\\|");
    let _ = writeln!(o, "| 0x{off:04X} | {name} | {acc} |");
}

fn table(out: &mut String, title: &str, intro: &str, fields: &[(&str, Field)]) {
    let _ = writeln!(out, "## {title}\n\n{intro}\n");
    let _ = writeln!(out, "| field | byte | bits | width |\n|---|---|---|---|");
    for (name, f) in fields {
        let _ = writeln!(out, "| `{name}` | {} | {}..{} | {} |", f.lsb / 8, f.lsb, f.end() - 1, f.width);
    }
    out.push('\n');
}

/// The whole contract as a Markdown document.
pub fn markdown() -> String {
    let mut o = String::new();
    o += "# rnic hardware/software contract\n\n";
    o += "Generated from the `rnic-contract` crate (`hdl/contract/`) by `rnic_contract::doc`; do not edit.\n";
    o += "Records are little-endian bit vectors: bit `8k+i` is bit `i` of byte `k`.\n\n";
    o += "## BAR0 registers (AXI4-Lite, 32-bit)\n\n| offset | name | access |\n|---|---|---|\n";
    for (off, name, acc) in [
        (regs::ID, "ID (reads 0x524E4943, \"RNIC\")", "RO"),
        (regs::VERSION, "VERSION (major << 16 | minor)", "RO"),
        (
            regs::CAPS,
            "CAPS (log2 QPs 3:0, log2 MRs 7:4, log2 CQs 11:8, log2 in-flight WQEs 15:12, datapath bytes 23:16)",
            "RO",
        ),
        (regs::CLOCK_MHZ, "CLOCK_MHZ", "RO"),
        (regs::MAC_LO, "MAC_LO (MAC bytes 0..4, byte 0 in bits 7:0)", "RW"),
        (regs::MAC_HI, "MAC_HI (MAC bytes 4..6 in bits 15:0)", "RW"),
        (regs::IPV4_ADDR, "IPV4_ADDR (first octet in bits 31:24)", "RW"),
        (
            regs::QP_CAPS,
            "QP_CAPS (log2 max SQ WQEs 3:0, log2 max RQ WQEs 7:4, max send SGEs 15:8, max receive SGEs 23:16, max_rd_atomic 31:24)",
            "RO",
        ),
        (regs::SEND_CAPS, "SEND_CAPS (max inline bytes 15:0)", "RO"),
        (regs::SRQ_CAPS, "SRQ_CAPS (log2 max SRQ WQEs 3:0, max SRQ SGEs 15:8)", "RO"),
        (
            regs::FEATURES,
            "FEATURES (RC 0, SRQ 1, atomics 2, UD 3, CQ events 4, RNR NAK generation 5, raw Ethernet path 6; ibv_atomic_cap 9:8)",
            "RO",
        ),
        (regs::SQ_DOORBELL, "SQ_DOORBELL (qpn << 16 | SQ producer index)", "WO"),
        (regs::RQ_DOORBELL, "RQ_DOORBELL (qpn << 16 | RQ producer index)", "WO"),
        (regs::CQ_ARM, "CQ_ARM (cqn << 24 | solicited << 23 | consumer index mod 2^23)", "WO"),
        (
            regs::CQ_CI,
            "CQ_CI (cqn << 24 | consumer index mod 2^23): the CQ's consumer index for overrun detection",
            "WO",
        ),
        (regs::IRQ_MASK, "IRQ_MASK (bit v masks interrupt vector v)", "RW"),
        (regs::IRQ_PENDING, "IRQ_PENDING (bit v: vector v has an event not yet sent)", "RO"),
        (regs::IRQ_MODERATION, "IRQ_MODERATION (15:0 window in units of 256 cycles; 0 off)", "RW"),
        (
            regs::ASYNC_EVENT_CQ,
            "ASYNC_EVENT_CQ (enable << 31 | CQ number 7:0): event CQEs (OPCODE 255, STATUS = ibv_event_type, QP_NUM = QP) of QP_FATAL 1 (a send WQE the NIC could not read), QP_REQ_ERR 2, QP_ACCESS_ERR 3, COMM_EST 4, SQ_DRAINED 5, QP_LAST_WQE_REACHED 16 (none for other requester errors: their error CQE reports them); CQ_ERR 0 with QP_NUM = the overrun CQ",
            "RW",
        ),
        (regs::CMD_DATA, "CMD_DATA[0..16] (512-bit staging record, word i = bits 32i+31..32i)", "WO"),
        (regs::CMD, "CMD (op << 24 | index; op 1 WRITE_QP, 2 WRITE_MR, 3 WRITE_CQ, 4 WRITE_SRQ)", "WO"),
    ] {
        reg_row(&mut o, off, name, acc);
    }
    for (i, name) in regs::counter::NAMES.iter().enumerate() {
        let _ = writeln!(o, "| 0x{:04X} | counter `{name}` | RO |", regs::COUNTERS as usize + 4 * i);
    }
    for (off, name, acc) in [
        (regs::RAW_TX_DATA, "RAW_TX_DATA[0..16] (raw frame to send, word i = bytes 4i..4i+3, byte 4i in 7:0)", "WO"),
        (
            regs::RAW_TX_SEND,
            "RAW_TX_SEND (length in bytes 6:0, sent as 60..=64; response once the NIC holds the frame)",
            "WO",
        ),
        (regs::RAW_RX_DATA, "RAW_RX_DATA[0..16] (the raw receive queue's head frame, laid out as RAW_TX_DATA)", "RO"),
        (regs::RAW_RX_STATUS, "RAW_RX_STATUS (head valid << 31 | head length 22:16 | frames taken mod 2^16)", "RO"),
        (regs::RAW_RX_POP, "RAW_RX_POP (any value: the head frame leaves the queue)", "WO"),
    ] {
        reg_row(&mut o, off, name, acc);
    }
    o.push('\n');
    table(
        &mut o,
        "QP context (CMD op 1, index = QPN)",
        "Written whole on every modify_qp; INIT_* flags reload the NIC's transport state.",
        &[
            ("STATE", qp_context::STATE),
            ("INIT_SQ_PSN", qp_context::INIT_SQ_PSN),
            ("INIT_RQ_PSN", qp_context::INIT_RQ_PSN),
            ("QP_TYPE (0 RC, 1 UD)", qp_context::QP_TYPE),
            ("PATH_MTU", qp_context::PATH_MTU),
            ("ACCESS", qp_context::ACCESS),
            ("PD", qp_context::PD),
            ("DEST_QPN", qp_context::DEST_QPN),
            ("SQ_PSN", qp_context::SQ_PSN),
            ("TIMEOUT", qp_context::TIMEOUT),
            ("RETRY_CNT", qp_context::RETRY_CNT),
            ("RQ_PSN", qp_context::RQ_PSN),
            ("RNR_RETRY", qp_context::RNR_RETRY),
            ("MIN_RNR_TIMER", qp_context::MIN_RNR_TIMER),
            ("PKEY", qp_context::PKEY),
            ("UDP_SPORT", qp_context::UDP_SPORT),
            ("DEST_IP (RC) / QKEY (UD)", qp_context::DEST_IP),
            ("DEST_MAC", qp_context::DEST_MAC),
            ("SEND_CQ", qp_context::SEND_CQ),
            ("SQ_LOG_SIZE", qp_context::SQ_LOG_SIZE),
            ("SQ_LOG_STRIDE", qp_context::SQ_LOG_STRIDE),
            ("SQ_BASE", qp_context::SQ_BASE),
            ("RECV_CQ", qp_context::RECV_CQ),
            ("RQ_LOG_SIZE", qp_context::RQ_LOG_SIZE),
            ("RQ_LOG_STRIDE", qp_context::RQ_LOG_STRIDE),
            ("MAX_RD_ATOMIC", qp_context::MAX_RD_ATOMIC),
            ("SRQN", qp_context::SRQN),
            ("USE_SRQ", qp_context::USE_SRQ),
            ("MAX_DEST_RD_ATOMIC", qp_context::MAX_DEST_RD_ATOMIC),
            ("RQ_BASE", qp_context::RQ_BASE),
        ],
    );
    table(
        &mut o,
        "Memory-region key-table entry (CMD op 2, index = key >> 8)",
        "A key is `index << 8 | tag`; VA..VA+LENGTH maps to IOVA..IOVA+LENGTH.",
        &[
            ("VALID", mr_entry::VALID),
            ("ACCESS", mr_entry::ACCESS),
            ("TAG", mr_entry::TAG),
            ("PD", mr_entry::PD),
            ("VA", mr_entry::VA),
            ("LENGTH", mr_entry::LENGTH),
            ("IOVA", mr_entry::IOVA),
        ],
    );
    table(
        &mut o,
        "lkey / rkey (a 32-bit word)",
        "`index << 8 | tag`. A key with a bit set above the index names no entry: the NIC refuses it.",
        &[("TAG", mr_entry::key::TAG), ("INDEX", mr_entry::key::INDEX), ("ABOVE (zero)", mr_entry::key::ABOVE)],
    );
    table(
        &mut o,
        "CQ context (CMD op 3, index = CQ number)",
        "Resets the CQ's producer index to 0 and disarms it. VECTOR: the interrupt vector of its \
         completion events (CQ_ARM).",
        &[
            ("VALID", cq_context::VALID),
            ("LOG_SIZE", cq_context::LOG_SIZE),
            ("VECTOR", cq_context::VECTOR),
            ("BASE", cq_context::BASE),
        ],
    );
    let send_intro = format!(
        "Fetched by DMA after a doorbell. A WQE takes `64 << SQ_LOG_STRIDE` bytes (64..={}); the first \
         64 are laid out below. SGE `i` >= 1 (up to {} SGEs) is at byte `48 + 16 i` (address 8, length 4, \
         lkey 4, like SGE 0); with `IBV_SEND_INLINE` (SEND_FLAGS bit 3) the data is at byte {} and \
         its length in SGE0_LENGTH (at most {} bytes).",
        wqe::stride(wqe::MAX_LOG_STRIDE),
        wqe::MAX_SGE,
        wqe::INLINE_DATA,
        wqe::MAX_INLINE
    );
    table(&mut o, "SRQ context (CMD op 4, index = SRQ number)", "LIMIT 0 disarms; when a WQE taken leaves fewer than LIMIT posted, the NIC disarms the SRQ and writes an event CQE (OPCODE 255, STATUS 15 = IBV_EVENT_SRQ_LIMIT_REACHED, QP_NUM = SRQ number, BYTE_LEN = WQEs left) to EVENT_CQ. INIT zeroes the SRQ's indices.", &[
        ("LIMIT", srq_context::LIMIT), ("EVENT_CQ", srq_context::EVENT_CQ), ("INIT", srq_context::INIT),
    ]);
    table(
        &mut o,
        "Send WQE (the first 64 bytes in the SQ ring)",
        &send_intro,
        &[
            ("WR_ID", wqe::WR_ID),
            ("OPCODE", wqe::OPCODE),
            ("SEND_FLAGS", wqe::SEND_FLAGS),
            ("NUM_SGE", wqe::NUM_SGE),
            ("IMM_DATA", wqe::IMM_DATA),
            ("REMOTE_ADDR", wqe::REMOTE_ADDR),
            ("RKEY", wqe::RKEY),
            ("SGE0_ADDR", wqe::SGE0_ADDR),
            ("SGE0_LENGTH", wqe::SGE0_LENGTH),
            ("SGE0_LKEY", wqe::SGE0_LKEY),
            ("COMPARE_ADD", wqe::COMPARE_ADD),
            ("SWAP", wqe::SWAP),
            ("UD_REMOTE_QPN (UD SEND)", wqe::UD_REMOTE_QPN),
            ("UD_REMOTE_QKEY (UD SEND; bit 31: the QP's QKEY)", wqe::UD_REMOTE_QKEY),
            ("UD_DEST_IP (UD SEND)", wqe::UD_DEST_IP),
            ("UD_DEST_MAC (UD SEND)", wqe::UD_DEST_MAC),
        ],
    );
    let recv_intro = format!(
        "Fetched by DMA when a SEND arrives. A receive WQE takes `64 << RQ_LOG_STRIDE` bytes (64..={}); \
         scatter entry `i` is at byte `16 + 16 i` (up to {} entries).",
        recv_wqe::stride(recv_wqe::MAX_LOG_STRIDE),
        recv_wqe::MAX_SGE
    );
    table(
        &mut o,
        "Receive WQE (the first 64 bytes in the RQ ring)",
        &recv_intro,
        &[
            ("WR_ID", recv_wqe::WR_ID),
            ("NUM_SGE", recv_wqe::NUM_SGE),
            ("SGE0_ADDR", recv_wqe::SGE0_ADDR),
            ("SGE0_LENGTH", recv_wqe::SGE0_LENGTH),
            ("SGE0_LKEY", recv_wqe::SGE0_LKEY),
        ],
    );
    table(
        &mut o,
        "CQE (32 bytes in the CQ ring)",
        "Written by DMA; OWNER of the n-th CQE is `!(n >> LOG_SIZE) & 1`.",
        &[
            ("WR_ID", cqe::WR_ID),
            ("BYTE_LEN", cqe::BYTE_LEN),
            ("IMM_DATA", cqe::IMM_DATA),
            ("QP_NUM", cqe::QP_NUM),
            ("OPCODE", cqe::OPCODE),
            ("STATUS", cqe::STATUS),
            ("WC_FLAGS", cqe::WC_FLAGS),
            ("OWNER", cqe::OWNER),
        ],
    );
    o
}

#[cfg(test)]
mod tests {
    #[test]
    fn docs_contract_md_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/contract.md");
        let want = super::markdown();
        if std::env::var_os("RNIC_BLESS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(have == want, "docs/contract.md is stale: run RNIC_BLESS=1 cargo test -p rnic-contract");
    }
}
