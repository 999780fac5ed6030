//! Wrappers around tools we did not write, used as independent oracles for RoCEv2 frames:
//! pcap files ([`write_pcap`], [`read_pcap`], via the `pcap-file` crate), Wireshark's
//! InfiniBand dissector ([`tshark_check`]) and scapy's RoCE layer ([`scapy_check`],
//! [`scapy_check_icrc`], [`scapy_build_pcap`]).
//!
//! The external tools are installed by `scripts/setup.sh` (tshark from Debian, scapy 2.6.1 in
//! `<repo>/.venv`). When one is missing the functions return [`OracleError::ToolMissing`],
//! whose message says to run that script; tests should let that fail rather than skip.
//!
//! What each oracle can and cannot see:
//! - tshark (≥ 4.0) decodes UDP port 4791 as RoCEv2 by default and flags frames whose lengths
//!   run past the captured bytes (`_ws.malformed`, expert errors) and, with the preference this
//!   module sets, bad IPv4 checksums. It does **not** verify the ICRC (it only displays
//!   `infiniband.invariant.crc`), nor PadCnt, nor a UDP Length shorter than the IPv4 payload.
//! - scapy recomputes the ICRC with its own implementation, so it catches any corruption of
//!   the bytes the ICRC covers.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::{DataLink, TsResolution};
use serde_json::Value;

/// Why an oracle could not give an answer (as opposed to an answer that a frame is bad).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OracleError {
    /// An external tool is not installed where we look for it.
    #[error("{tool} is not available ({detail}); run scripts/setup.sh to install it")]
    ToolMissing {
        /// The tool, e.g. `tshark` or `scapy (.venv/bin/python)`.
        tool: &'static str,
        /// Where we looked or what failed.
        detail: String,
    },
    /// Reading or writing a file failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The pcap library rejected a file or a frame.
    #[error("pcap error on {path}: {source}")]
    Pcap {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: pcap_file::PcapError,
    },
    /// A tool ran but exited unsuccessfully.
    #[error("{tool} failed ({status}): {stderr}")]
    ToolFailed {
        /// The tool.
        tool: &'static str,
        /// Its exit status.
        status: String,
        /// Its standard error output.
        stderr: String,
    },
    /// A tool's output was not what this wrapper expects.
    #[error("unexpected output from {tool}: {detail}")]
    BadOutput {
        /// The tool.
        tool: &'static str,
        /// What was wrong.
        detail: String,
    },
}

/// The workspace root: the parent of this crate's `CARGO_MANIFEST_DIR`.
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// Writes `frames` to a classic pcap file at `path`: link type Ethernet (frames start with the
/// Ethernet header and carry no FCS), nanosecond timestamps. Each frame is
/// `(timestamp in ns since the Unix epoch, bytes)`.
///
/// # Errors
/// [`OracleError::Io`] if the file cannot be created, [`OracleError::Pcap`] if a frame cannot
/// be written (e.g. a timestamp beyond year 2106).
pub fn write_pcap(path: impl AsRef<Path>, frames: &[(u64, Vec<u8>)]) -> Result<(), OracleError> {
    let path = path.as_ref();
    let io = |source| OracleError::Io { path: path.to_path_buf(), source };
    let pcap = |source| OracleError::Pcap { path: path.to_path_buf(), source };
    let file = std::fs::File::create(path).map_err(io)?;
    let longest = frames.iter().map(|(_, f)| f.len()).max().unwrap_or(0);
    let header = PcapHeader {
        snaplen: u32::try_from(longest).unwrap_or(u32::MAX).max(65535),
        datalink: DataLink::ETHERNET,
        ts_resolution: TsResolution::NanoSecond,
        ..PcapHeader::default()
    };
    let mut writer = PcapWriter::with_header(std::io::BufWriter::new(file), header).map_err(pcap)?;
    for (ts_ns, frame) in frames {
        let len = u32::try_from(frame.len())
            .map_err(|_| pcap(pcap_file::PcapError::InvalidField("frame longer than 4 GiB")))?;
        writer.write_packet(&PcapPacket::new(Duration::from_nanos(*ts_ns), len, frame)).map_err(pcap)?;
    }
    use std::io::Write;
    writer.into_writer().flush().map_err(io)
}

/// Reads every frame of a pcap file (micro- or nanosecond, any link type) as
/// `(timestamp in ns, captured bytes)`.
///
/// # Errors
/// [`OracleError::Io`] or [`OracleError::Pcap`].
pub fn read_pcap(path: impl AsRef<Path>) -> Result<Vec<(u64, Vec<u8>)>, OracleError> {
    let path = path.as_ref();
    let pcap = |source| OracleError::Pcap { path: path.to_path_buf(), source };
    let file = std::fs::File::open(path).map_err(|source| OracleError::Io { path: path.to_path_buf(), source })?;
    let mut reader = PcapReader::new(std::io::BufReader::new(file)).map_err(pcap)?;
    let mut frames = Vec::new();
    while let Some(packet) = reader.next_packet() {
        let packet = packet.map_err(pcap)?;
        let ts = u64::try_from(packet.timestamp.as_nanos()).unwrap_or(u64::MAX);
        frames.push((ts, packet.data.into_owned()));
    }
    Ok(frames)
}

/// Severity of a Wireshark expert-info entry (`_ws.expert.severity`, epan/proto.h `PI_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExpertSeverity {
    /// PI_COMMENT (0x00100000).
    Comment,
    /// PI_CHAT (0x00200000): informational.
    Chat,
    /// PI_NOTE (0x00400000): unusual but legal.
    Note,
    /// PI_WARN (0x00600000): probably a problem.
    Warning,
    /// PI_ERROR (0x00800000): a malformed packet.
    Error,
}

impl ExpertSeverity {
    fn from_wireshark(value: u32) -> ExpertSeverity {
        match value {
            v if v >= 0x0080_0000 => ExpertSeverity::Error,
            v if v >= 0x0060_0000 => ExpertSeverity::Warning,
            v if v >= 0x0040_0000 => ExpertSeverity::Note,
            v if v >= 0x0020_0000 => ExpertSeverity::Chat,
            _ => ExpertSeverity::Comment,
        }
    }
}

/// One expert-info entry tshark attached to a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpertInfo {
    /// Its severity.
    pub severity: ExpertSeverity,
    /// Its text, e.g. `Bad checksum [should be 0x26aa]`.
    pub message: String,
}

/// What tshark decoded from one frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TsharkPacket {
    /// 1-based frame number in the pcap.
    pub frame: u32,
    /// The protocol stack tshark saw (`frame.protocols`), e.g.
    /// `eth:ethertype:ip:udp:infiniband`.
    pub protocols: String,
    /// BTH opcode (`infiniband.bth.opcode`); `None` if tshark found no BTH.
    pub opcode: Option<u8>,
    /// BTH destination QP (`infiniband.bth.destqp`, 24 bits).
    pub dest_qp: Option<u32>,
    /// BTH PSN (`infiniband.bth.psn`, 24 bits).
    pub psn: Option<u32>,
    /// Whether tshark marked the frame malformed (`_ws.malformed`, e.g. a dissector ran off
    /// the end of the captured bytes).
    pub malformed: bool,
    /// Every expert-info entry (`_ws.expert.severity`, `_ws.expert.message`).
    pub expert: Vec<ExpertInfo>,
}

impl TsharkPacket {
    /// Why this frame is not a clean RoCEv2 frame to tshark: not decoded as InfiniBand (unless
    /// it is ARP, [`Self::is_arp`]), marked malformed, or an expert entry of severity warning
    /// or error. Empty if clean.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.opcode.is_none() && !self.is_arp() {
            problems.push(format!("no BTH decoded (protocols {})", self.protocols));
        }
        if self.malformed {
            problems.push("malformed".to_owned());
        }
        for e in &self.expert {
            if e.severity >= ExpertSeverity::Warning {
                problems.push(format!("{:?}: {}", e.severity, e.message));
            }
        }
        problems
    }

    /// Whether tshark decoded an ARP packet (`eth:ethertype:arp`): a frame of the NIC's raw
    /// Ethernet path, clean without a BTH (and with no ICRC to check).
    pub fn is_arp(&self) -> bool {
        self.protocols.split(':').any(|p| p == "arp")
    }

    /// Whether [`TsharkPacket::problems`] is empty.
    pub fn is_clean(&self) -> bool {
        self.problems().is_empty()
    }
}

/// tshark's verdict on a whole pcap, one entry per frame in file order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TsharkReport {
    /// The frames.
    pub packets: Vec<TsharkPacket>,
}

impl TsharkReport {
    /// The frames with problems (see [`TsharkPacket::problems`]).
    pub fn flagged(&self) -> Vec<&TsharkPacket> {
        self.packets.iter().filter(|p| !p.is_clean()).collect()
    }

    /// Whether every frame is a clean RoCEv2 frame to tshark.
    pub fn all_clean(&self) -> bool {
        self.packets.iter().all(TsharkPacket::is_clean)
    }

    /// A one-line-per-problem description of the flagged frames, for assertion messages.
    pub fn summary(&self) -> String {
        self.flagged()
            .iter()
            .map(|p| format!("frame {}: {}", p.frame, p.problems().join("; ")))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Protocols whose heuristic dissectors tshark tries on InfiniBand payloads. They read our
/// arbitrary test payloads as their own messages and report them malformed (an empty RC
/// SEND_ONLY shows up as `[Malformed Packet: RPCoRDMA]`), so [`tshark_check`] disables them.
/// `--disable-protocol` takes one name per flag and silently ignores unknown names.
const PAYLOAD_HEURISTICS: [&str; 9] =
    ["rpcordma", "smb_direct", "nvme-rdma", "iser", "smc", "lnet", "infiniband.eoib", "infiniband_sdp", "fcoib"];

/// The fields [`tshark_check`] asks tshark for.
const TSHARK_FIELDS: [&str; 8] = [
    "frame.number",
    "frame.protocols",
    "infiniband.bth.opcode",
    "infiniband.bth.destqp",
    "infiniband.bth.psn",
    "_ws.malformed",
    "_ws.expert.severity",
    "_ws.expert.message",
];

/// Runs `tshark -r PCAP -T json -e ...` with UDP port 4791 decoded as InfiniBand (RoCEv2),
/// IPv4 header checksum validation on and the InfiniBand payload heuristics off, and returns
/// per frame the decoded BTH opcode, destination QP and PSN, and any malformed marks and
/// expert entries.
///
/// tshark does not check the ICRC; use [`scapy_check_icrc`] for that.
///
/// # Errors
/// [`OracleError::ToolMissing`] if `tshark` is not on `PATH`; [`OracleError::ToolFailed`] if
/// it fails (e.g. an unreadable file); [`OracleError::BadOutput`] if its JSON is unexpected.
pub fn tshark_check(pcap: impl AsRef<Path>) -> Result<TsharkReport, OracleError> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-n")
        .arg("-r")
        .arg(pcap.as_ref())
        .args(["-d", "udp.port==4791,infiniband"])
        .args(["-o", "ip.check_checksum:TRUE"])
        .args(["-T", "json"]);
    for p in PAYLOAD_HEURISTICS {
        cmd.args(["--disable-protocol", p]);
    }
    for f in TSHARK_FIELDS {
        cmd.args(["-e", f]);
    }
    let output = cmd.output().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            OracleError::ToolMissing { tool: "tshark", detail: "tshark not found on PATH".to_owned() }
        }
        _ => OracleError::ToolFailed { tool: "tshark", status: "could not start".to_owned(), stderr: e.to_string() },
    })?;
    if !output.status.success() {
        return Err(OracleError::ToolFailed {
            tool: "tshark",
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    parse_tshark_json(&String::from_utf8_lossy(&output.stdout))
}

fn bad_tshark(detail: impl Into<String>) -> OracleError {
    OracleError::BadOutput { tool: "tshark", detail: detail.into() }
}

/// Parses a decimal or `0x` hexadecimal unsigned integer as tshark prints it.
fn parse_uint(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

fn parse_tshark_json(stdout: &str) -> Result<TsharkReport, OracleError> {
    if stdout.trim().is_empty() {
        return Ok(TsharkReport::default());
    }
    let json: Value = serde_json::from_str(stdout).map_err(|e| bad_tshark(e.to_string()))?;
    let frames = json.as_array().ok_or_else(|| bad_tshark("top level is not an array"))?;
    let mut packets = Vec::with_capacity(frames.len());
    for frame in frames {
        let layers = frame
            .pointer("/_source/layers")
            .and_then(Value::as_object)
            .ok_or_else(|| bad_tshark("a frame without _source.layers"))?;
        let values = |field: &str| -> Vec<&str> {
            layers
                .get(field)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default()
        };
        let first_uint = |field: &str| -> Result<Option<u64>, OracleError> {
            match values(field).first() {
                None => Ok(None),
                Some(s) => {
                    parse_uint(s).map(Some).ok_or_else(|| bad_tshark(format!("{field} = {s:?} is not a number")))
                }
            }
        };
        let narrow = |field: &str, v: Option<u64>| -> Result<Option<u32>, OracleError> {
            v.map(|v| u32::try_from(v).map_err(|_| bad_tshark(format!("{field} = {v} too big")))).transpose()
        };
        let frame_no = narrow("frame.number", first_uint("frame.number")?)?
            .ok_or_else(|| bad_tshark("a frame without frame.number"))?;
        let opcode = first_uint("infiniband.bth.opcode")?
            .map(|v| u8::try_from(v).map_err(|_| bad_tshark(format!("opcode {v} too big"))))
            .transpose()?;
        let severities = values("_ws.expert.severity");
        let messages = values("_ws.expert.message");
        let expert = severities
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let sev = parse_uint(s)
                    .and_then(|v| u32::try_from(v).ok())
                    .ok_or_else(|| bad_tshark(format!("expert severity {s:?}")))?;
                Ok(ExpertInfo {
                    severity: ExpertSeverity::from_wireshark(sev),
                    message: messages.get(i).copied().unwrap_or_default().to_owned(),
                })
            })
            .collect::<Result<Vec<_>, OracleError>>()?;
        packets.push(TsharkPacket {
            frame: frame_no,
            protocols: values("frame.protocols").first().copied().unwrap_or_default().to_owned(),
            opcode,
            dest_qp: narrow("destqp", first_uint("infiniband.bth.destqp")?)?,
            psn: narrow("psn", first_uint("infiniband.bth.psn")?)?,
            malformed: !values("_ws.malformed").is_empty(),
            expert,
        });
    }
    Ok(TsharkReport { packets })
}

/// scapy's verdict on one frame (one JSON line of `oracles/scapy_icrc.py check`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScapyFrame {
    /// 1-based frame number in the pcap.
    pub frame: u32,
    /// Whether scapy's recomputed ICRC equals the 4 bytes on the wire.
    pub icrc_ok: bool,
    /// BTH opcode as scapy dissected it; `None` if it found no BTH.
    pub opcode: Option<u8>,
    /// BTH destination QP.
    pub dest_qp: Option<u32>,
    /// BTH PSN.
    pub psn: Option<u32>,
    /// The ICRC bytes on the wire, hex, in wire order.
    pub icrc_wire: Option<String>,
    /// The ICRC bytes scapy computed, hex, in wire order.
    pub icrc_scapy: Option<String>,
    /// Why there is no verdict (no BTH, or a scapy exception), if so.
    pub error: Option<String>,
}

/// The script shipped with this crate: `firmware-tests/oracles/scapy_icrc.py`.
pub fn scapy_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("oracles/scapy_icrc.py")
}

/// The Python interpreter of the project's virtualenv: `<repo>/.venv/bin/python`.
pub fn venv_python() -> PathBuf {
    repo_root().join(".venv/bin/python")
}

/// Runs `oracles/scapy_icrc.py MODE PCAP` with the venv's Python and returns its stdout lines
/// parsed as JSON.
fn run_scapy(mode: &str, pcap: &Path) -> Result<Vec<Value>, OracleError> {
    let python = venv_python();
    if !python.exists() {
        return Err(OracleError::ToolMissing {
            tool: "scapy (.venv/bin/python)",
            detail: format!("{} does not exist", python.display()),
        });
    }
    let output = Command::new(&python).arg(scapy_script()).arg(mode).arg(pcap).output().map_err(|e| {
        OracleError::ToolMissing {
            tool: "scapy (.venv/bin/python)",
            detail: format!("cannot run {}: {e}", python.display()),
        }
    })?;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        if stderr.contains("No module named 'scapy'") {
            return Err(OracleError::ToolMissing {
                tool: "scapy (.venv/bin/python)",
                detail: "scapy is not installed in .venv".to_owned(),
            });
        }
        return Err(OracleError::ToolFailed { tool: "scapy_icrc.py", status: output.status.to_string(), stderr });
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l)
                .map_err(|e| OracleError::BadOutput { tool: "scapy_icrc.py", detail: format!("{e} in line {l:?}") })
        })
        .collect()
}

/// Reads each frame of `pcap` with scapy and recomputes its RoCEv2 ICRC with scapy's own
/// RoCE layer (`scapy.contrib.roce.BTH.compute_icrc`), comparing it with the wire bytes.
///
/// # Errors
/// [`OracleError::ToolMissing`] if `<repo>/.venv` or scapy is missing;
/// [`OracleError::ToolFailed`] / [`OracleError::BadOutput`] if the script fails.
pub fn scapy_check(pcap: impl AsRef<Path>) -> Result<Vec<ScapyFrame>, OracleError> {
    let bad = |detail: String| OracleError::BadOutput { tool: "scapy_icrc.py", detail };
    run_scapy("check", pcap.as_ref())?
        .into_iter()
        .map(|v| {
            let uint = |k: &str| v.get(k).and_then(Value::as_u64);
            let string = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
            Ok(ScapyFrame {
                frame: uint("frame")
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| bad(format!("no frame number in {v}")))?,
                icrc_ok: v.get("icrc_ok").and_then(Value::as_bool).ok_or_else(|| bad(format!("no icrc_ok in {v}")))?,
                opcode: uint("opcode").and_then(|n| u8::try_from(n).ok()),
                dest_qp: uint("dqpn").and_then(|n| u32::try_from(n).ok()),
                psn: uint("psn").and_then(|n| u32::try_from(n).ok()),
                icrc_wire: string("icrc_wire"),
                icrc_scapy: string("icrc_scapy"),
                error: string("error"),
            })
        })
        .collect()
}

/// Per frame of `pcap`, whether scapy's recomputed ICRC matches (see [`scapy_check`]). A
/// frame scapy cannot read as RoCEv2 counts as `false`.
///
/// # Errors
/// As [`scapy_check`].
pub fn scapy_check_icrc(pcap: impl AsRef<Path>) -> Result<Vec<bool>, OracleError> {
    Ok(scapy_check(pcap)?.into_iter().map(|f| f.icrc_ok).collect())
}

/// What both oracles say about one capture: tshark's dissection and scapy's ICRC verdicts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureVerdict {
    /// tshark's report, one entry per frame.
    pub tshark: TsharkReport,
    /// scapy's ICRC verdict per frame.
    pub icrc: Vec<bool>,
}

impl CaptureVerdict {
    /// Whether both oracles saw exactly `frames` frames, tshark flagged none of them and scapy
    /// verified every ICRC.
    pub fn all_clean(&self, frames: usize) -> bool {
        self.tshark.packets.len() == frames
            && self.icrc.len() == frames
            && self.tshark.all_clean()
            && self.icrc.iter().all(|ok| *ok)
    }

    /// Frame counts, tshark's problems and the frames whose ICRC failed, for assertion messages.
    pub fn summary(&self) -> String {
        let bad_icrc: Vec<usize> = self.icrc.iter().enumerate().filter(|(_, ok)| !**ok).map(|(i, _)| i + 1).collect();
        format!(
            "tshark: {} frames{}{}; scapy: {} frames, ICRC failed on frames {bad_icrc:?}",
            self.tshark.packets.len(),
            if self.tshark.all_clean() { "" } else { ", flagged:\n" },
            self.tshark.summary(),
            self.icrc.len(),
        )
    }
}

/// Runs both oracles on `pcap` ([`tshark_check`], [`scapy_check_icrc`]); an ARP frame
/// tshark finds clean counts as ICRC-verified (it has none).
///
/// # Errors
/// As [`tshark_check`] and [`scapy_check`].
pub fn check_capture(pcap: impl AsRef<Path>) -> Result<CaptureVerdict, OracleError> {
    let pcap = pcap.as_ref();
    let tshark = tshark_check(pcap)?;
    let mut icrc = scapy_check_icrc(pcap)?;
    // An ARP frame has no ICRC: tshark's clean decode stands for it.
    for (ok, p) in icrc.iter_mut().zip(&tshark.packets) {
        *ok |= p.is_arp() && p.is_clean();
    }
    Ok(CaptureVerdict { tshark, icrc })
}

/// Has scapy build a fixed set of RoCEv2 frames (its RoCE layer computes every ICRC) into a
/// pcap at `out`, and returns one JSON object per frame describing what was built: keys
/// `frame`, `note`, `opcode`, `dqpn`, `psn`, `pkey`, `se`, `migreq`, `padcount`, `ackreq`,
/// `fecn`, `becn`, `ecn`, `ttl`, `udp_chksum`, `reth` (`{va, rkey, dma_len}` or null),
/// `aeth` (`{syndrome, msn}` or null), `immdt` (integer or null), `payload` (hex, no pad) and
/// `icrc` (hex, wire order). The last frame is a CNP, described only by `frame`, `note`,
/// `opcode`, `dqpn`, `psn` and `icrc`.
///
/// # Errors
/// As [`scapy_check`].
pub fn scapy_build_pcap(out: impl AsRef<Path>) -> Result<Vec<Value>, OracleError> {
    run_scapy("build", out.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severity_thresholds() {
        assert_eq!(ExpertSeverity::from_wireshark(8_388_608), ExpertSeverity::Error);
        assert_eq!(ExpertSeverity::from_wireshark(0x0060_0000), ExpertSeverity::Warning);
        assert_eq!(ExpertSeverity::from_wireshark(0x0040_0000), ExpertSeverity::Note);
        assert!(ExpertSeverity::Note < ExpertSeverity::Warning);
    }

    #[test]
    fn parses_tshark_json() {
        // Shape of `tshark -T json -e ...` output (tshark 4.0.17), trimmed.
        let json = r#"[
          {"_source": {"layers": {
            "frame.number": ["1"], "frame.protocols": ["eth:ethertype:ip:udp:infiniband"],
            "infiniband.bth.opcode": ["10"], "infiniband.bth.destqp": ["0x000012"],
            "infiniband.bth.psn": ["2748"]}}},
          {"_source": {"layers": {
            "frame.number": ["2"], "frame.protocols": ["eth:ethertype:ip:udp:infiniband"],
            "_ws.malformed": ["_ws.malformed", "[Malformed Packet: IB]"],
            "_ws.expert.severity": ["8388608", "4194304"],
            "_ws.expert.message": ["IPv4 total length exceeds packet length (36 bytes)", "a note"]}}}
        ]"#;
        let r = parse_tshark_json(json).unwrap();
        assert_eq!(r.packets.len(), 2);
        let p = &r.packets[0];
        assert_eq!((p.opcode, p.dest_qp, p.psn), (Some(10), Some(0x12), Some(2748)));
        assert!(p.is_clean());
        let q = &r.packets[1];
        assert!(q.malformed);
        assert_eq!(q.expert[1].severity, ExpertSeverity::Note);
        assert_eq!(q.problems().len(), 3); // no BTH, malformed, one error
        assert_eq!(r.flagged().len(), 1);
        assert!(!r.all_clean());
        assert!(r.summary().starts_with("frame 2: no BTH decoded"));
        assert_eq!(parse_tshark_json("").unwrap(), TsharkReport::default());
        assert!(parse_tshark_json("{}").is_err());
        assert!(parse_tshark_json(r#"[{"_source":{"layers":{"frame.number":["x"]}}}]"#).is_err());
    }

    #[test]
    fn pcap_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rt.pcap");
        let frames = vec![(1_500_000_123, vec![1u8, 2, 3]), (2_000_000_000, vec![0; 70_000])];
        write_pcap(&path, &frames).unwrap();
        assert_eq!(read_pcap(&path).unwrap(), frames);
    }

    #[test]
    fn missing_file_is_an_error() {
        assert!(matches!(read_pcap("/nonexistent/x.pcap"), Err(OracleError::Io { .. })));
    }
}
