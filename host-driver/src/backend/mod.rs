//! Choosing a backend at run time: one device string everywhere (`--device` on the command line,
//! `RNIC_DEVICE` in the environment, [`open_device`] in programs). See docs/pcie.md.
//!
//! | string | backend | cargo feature |
//! |---|---|---|
//! | `sim` | NIC 0 of a new in-process simulated world of one NIC, its port looped back (`rnic::sim::SimDevice`) | `sim` |
//! | `sim-port:SPEC` | the NIC of a new in-process world of one NIC, its port attached to SPEC: `simbricks:PATH` / `simbricks-listen:PATH` (a SimBricks link to another process), `udp:…`, `tcp:…`, `tcp-listen:…`, `tap:NAME` (`rnic::sim::port_device`) | `sim` |
//! | `vfio-user:PATH` | the NIC behind a vfio-user socket (`rnic sim serve`), [`VfioUserDevice`] | `vfio-user` |
//! | `vfio:DDDD:BB:DD.F` | a PCI function bound to `vfio-pci` (a board, or the simulated NIC in a QEMU guest), [`VfioDevice`] | `vfio` |
//!
//! Opening fails with an [`OpenError`] that names the cause and a hint (`Error::Open`).
use std::path::PathBuf;
use std::rc::Rc;

use crate::device::Device;
#[allow(unused_imports)]
use crate::error::{Error, IoKind, Result};

#[cfg(any(feature = "vfio-user", feature = "vfio"))]
mod shared_mem;
#[cfg(feature = "vfio")]
mod vfio;
#[cfg(feature = "vfio-user")]
mod vfio_user;

#[cfg(feature = "vfio")]
pub use vfio::VfioDevice;
#[cfg(feature = "vfio-user")]
pub use vfio_user::VfioUserDevice;

/// The environment variable that names the device when `--device` is not given.
pub const DEVICE_ENV: &str = "RNIC_DEVICE";

/// A parsed device string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSpec {
    /// `sim`: an in-process simulated NIC.
    Sim,
    /// `sim-port:SPEC`: an in-process simulated NIC whose Ethernet port is attached to SPEC (a
    /// bridge or SimBricks link in `rnic_sim::BridgeSpec`'s syntax, kept as written).
    SimPort(String),
    /// `vfio-user:PATH`: the NIC behind a vfio-user socket.
    VfioUser(PathBuf),
    /// `vfio:DDDD:BB:DD.F`: a PCI function bound to vfio-pci (the full address, domain included).
    Vfio(String),
}

impl std::fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceSpec::Sim => write!(f, "sim"),
            DeviceSpec::SimPort(p) => write!(f, "sim-port:{p}"),
            DeviceSpec::VfioUser(p) => write!(f, "vfio-user:{}", p.display()),
            DeviceSpec::Vfio(bdf) => write!(f, "vfio:{bdf}"),
        }
    }
}

fn bad(spec: &str, why: impl Into<String>) -> OpenError {
    OpenError::BadSpec { spec: spec.to_owned(), why: why.into() }
}

/// Checks a PCI address `DDDD:BB:DD.F` (or `BB:DD.F`, domain 0000) and returns it in full,
/// lower case.
fn parse_bdf(spec: &str, s: &str) -> std::result::Result<String, OpenError> {
    let full = if s.matches(':').count() == 1 { format!("0000:{s}") } else { s.to_owned() };
    let hex = |t: &str, n: usize| t.len() == n && t.chars().all(|c| c.is_ascii_hexdigit());
    let ok = match full.split([':', '.']).collect::<Vec<_>>()[..] {
        [d, b, dev, f] => {
            hex(d, 4)
                && hex(b, 2)
                && hex(dev, 2)
                && u8::from_str_radix(dev, 16).is_ok_and(|v| v < 32)
                && f.len() == 1
                && f.chars().all(|c| ('0'..='7').contains(&c))
        }
        _ => false,
    };
    if ok {
        Ok(full.to_ascii_lowercase())
    } else {
        Err(bad(spec, format!("{s:?} is not a PCI address DDDD:BB:DD.F (as lspci -D prints it)")))
    }
}

impl std::str::FromStr for DeviceSpec {
    type Err = OpenError;

    fn from_str(spec: &str) -> std::result::Result<Self, OpenError> {
        if spec == "sim" {
            return Ok(DeviceSpec::Sim);
        }
        if let Some(port) = spec.strip_prefix("sim-port:") {
            if port.is_empty() {
                return Err(bad(spec, "no port after sim-port: (e.g. sim-port:simbricks-listen:/tmp/link.sock)"));
            }
            #[cfg(feature = "sim")]
            port.parse::<rnic_sim::BridgeSpec>().map_err(|e| bad(spec, e))?;
            return Ok(DeviceSpec::SimPort(port.to_owned()));
        }
        if let Some(path) = spec.strip_prefix("vfio-user:") {
            if path.is_empty() {
                return Err(bad(spec, "no socket path after vfio-user:"));
            }
            return Ok(DeviceSpec::VfioUser(PathBuf::from(path)));
        }
        if let Some(bdf) = spec.strip_prefix("vfio:") {
            return parse_bdf(spec, bdf).map(DeviceSpec::Vfio);
        }
        Err(bad(spec, "unknown backend"))
    }
}

/// Why a device could not be opened: each variant's message names the cause and ends with a
/// hint. `Error::Open` carries it; [`Error::errno`] gives the errno in brackets below.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// A device string that is not `sim`, `vfio-user:PATH` or `vfio:DDDD:BB:DD.F` (EINVAL).
    #[error("bad device string {spec:?}: {why} (hint: use sim, sim-port:SPEC, vfio-user:PATH or vfio:DDDD:BB:DD.F)")]
    BadSpec {
        /// The string.
        spec: String,
        /// What is wrong.
        why: String,
    },
    /// The backend's cargo feature is off in this build (EOPNOTSUPP).
    #[error("the {backend} backend is not built into this program (hint: build it with the cargo feature {feature} of the rnic crate)")]
    NotBuilt {
        /// The backend.
        backend: &'static str,
        /// The feature that enables it.
        feature: &'static str,
    },
    /// Nothing at the socket path (ENOENT).
    #[error("no vfio-user socket at {path} (hint: start the simulated NICs with `rnic sim serve --nics 2 --socket-dir DIR`, then use --device vfio-user:DIR/nic0.sock)")]
    SocketMissing {
        /// The path.
        path: PathBuf,
    },
    /// The socket exists but nothing listens on it (ECONNREFUSED).
    #[error("vfio-user socket {path}: connection refused, no server is listening (hint: the `rnic sim serve` that made it has exited; start it again)")]
    ConnectionRefused {
        /// The path.
        path: PathBuf,
    },
    /// The server accepted the connection but did not answer the version negotiation in time
    /// (EBUSY).
    #[error("vfio-user socket {path}: the server did not answer within {seconds} s (hint: each simulated NIC serves one client at a time; is another program attached to it?)")]
    ServerBusy {
        /// The path.
        path: PathBuf,
        /// How long we waited.
        seconds: u64,
    },
    /// The server answered something this driver cannot use (EIO).
    #[error("vfio-user socket {path}: {message}")]
    Protocol {
        /// The path.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// No such PCI function (ENODEV).
    #[error(
        "no PCI device {bdf} (/sys/bus/pci/devices/{bdf} does not exist) (hint: `lspci -D` lists the PCI addresses)"
    )]
    NoSuchPciDevice {
        /// The PCI address.
        bdf: String,
    },
    /// The function has no IOMMU group: the IOMMU is off (ENODEV).
    #[error("PCI device {bdf} has no IOMMU group, so VFIO cannot reach it (hint: enable the IOMMU: intel_iommu=on or amd_iommu=on on the kernel command line and VT-d/AMD-Vi in the firmware; in a QEMU guest add -device intel-iommu,caching-mode=on,intremap=on)")]
    NoIommuGroup {
        /// The PCI address.
        bdf: String,
    },
    /// The function is bound to another driver, or to none (ENODEV).
    #[error("PCI device {bdf} is {}, not to vfio-pci (hint: modprobe vfio-pci; echo vfio-pci > /sys/bus/pci/devices/{bdf}/driver_override; {}echo {bdf} > /sys/bus/pci/drivers_probe)", match driver { Some(d) => format!("bound to {d}"), None => "bound to no driver".to_owned() }, match driver { Some(d) => format!("echo {bdf} > /sys/bus/pci/drivers/{d}/unbind; "), None => String::new() })]
    NotBoundToVfio {
        /// The PCI address.
        bdf: String,
        /// The driver it is bound to.
        driver: Option<String>,
    },
    /// The VFIO group node cannot be opened by this user (EACCES).
    #[error("no permission to open {path} (hint: run as root, or give the group's node to your user: sudo chown $USER {path})")]
    VfioPermission {
        /// The node, `/dev/vfio/N`.
        path: PathBuf,
    },
    /// The locked-memory limit is too low for DMA mappings (ENOMEM).
    #[error("the locked-memory limit ({limit_kib} KiB, ulimit -l) is too low to map {needed_kib} KiB for DMA (hint: ulimit -l unlimited, or raise memlock in /etc/security/limits.conf; containers need --ulimit memlock=-1)")]
    MemlockLimit {
        /// RLIMIT_MEMLOCK in KiB.
        limit_kib: u64,
        /// What the mapping needed in KiB.
        needed_kib: u64,
    },
    /// BAR0's ID register is not "RNIC" (ENODEV).
    #[error("{device}: BAR0 ID reads {id:#010x}, an rnic reads {:#010x} (\"RNIC\") (hint: is this the right device? an FPGA without the rnic bitstream, or a read that failed, reads something else; all ones means the device did not answer)", rnic_contract::regs::ID_VALUE)]
    NotAnRnic {
        /// The device's name.
        device: String,
        /// The value read.
        id: u32,
    },
    /// The NIC implements another contract major version than this driver (ENODEV).
    #[error("{device}: the NIC implements contract version {nic_major}.{nic_minor} (VERSION = {version:#010x}), this driver speaks {driver_major}.x (hint: build the driver and the NIC from the same rnic revision: the register map and record formats differ between major versions)")]
    ContractVersion {
        /// The device's name.
        device: String,
        /// The VERSION register.
        version: u32,
        /// Its major version.
        nic_major: u16,
        /// Its minor version.
        nic_minor: u16,
        /// The driver's major version.
        driver_major: u16,
    },
    /// A VFIO operation failed (EIO).
    #[error("{bdf}: VFIO {op}: {source}")]
    Vfio {
        /// The PCI address.
        bdf: String,
        /// What was done.
        op: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
}

impl From<OpenError> for Error {
    fn from(e: OpenError) -> Self {
        Error::Open(e)
    }
}

/// Waits until the eventfd of `vector` counts an interrupt or `timeout` passes; returns the
/// interrupts consumed (0 on timeout).
#[cfg(any(feature = "vfio-user", feature = "vfio"))]
fn wait_eventfd(fd: Option<&std::fs::File>, vector: u16, timeout: std::time::Duration) -> Result<u64> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let f = fd.ok_or_else(|| Error::InvalidArgument(format!("the device has no MSI-X vector {vector}")))?;
    let mut pfd = libc::pollfd { fd: f.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut pfd, 1, ms) };
    if n < 0 {
        return Err(Error::io(
            IoKind::Backend,
            format!("poll of MSI-X vector {vector}"),
            std::io::Error::last_os_error(),
        ));
    }
    if n == 0 {
        return Ok(0);
    }
    let mut b = [0u8; 8];
    match (&*f).read(&mut b) {
        Ok(8) => Ok(u64::from_le_bytes(b)),
        Ok(_) => Ok(0),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(0),
        Err(e) => Err(Error::io(IoKind::Backend, format!("reading the eventfd of MSI-X vector {vector}"), e)),
    }
}

/// Opens the device a device string names.
///
/// # Errors
/// `Error::Open` with an [`OpenError`] (bad string, backend not built, socket missing or
/// refused, VFIO setup problems); backend errors.
pub fn open_device(spec: &str) -> Result<Rc<dyn Device>> {
    open_spec(&spec.parse::<DeviceSpec>()?)
}

/// The device string from `RNIC_DEVICE`, if set and not empty.
pub fn device_from_env() -> Option<String> {
    std::env::var(DEVICE_ENV).ok().filter(|s| !s.is_empty())
}

/// Opens a parsed device string (see [`open_device`]).
///
/// # Errors
/// As [`open_device`].
pub fn open_spec(spec: &DeviceSpec) -> Result<Rc<dyn Device>> {
    match spec {
        DeviceSpec::Sim => {
            #[cfg(feature = "sim")]
            {
                // One NIC with its port looped back, as `sim` in the device list (devlist.rs).
                let world =
                    rnic_sim::World::with_topology(1, rnic_sim::SimConfig::default(), rnic_sim::Topology::Loopback)
                        .map_err(|e| crate::sim::sim_error("creating a one-NIC simulated world", e))?;
                let dev =
                    crate::sim::SimDevice::new(Rc::new(std::cell::RefCell::new(world)), 0)?.with_progress_cycles(8);
                Ok(Rc::new(dev))
            }
            #[cfg(not(feature = "sim"))]
            Err(OpenError::NotBuilt { backend: "sim", feature: "sim" }.into())
        }
        DeviceSpec::SimPort(port) => {
            #[cfg(feature = "sim")]
            {
                let bridge = port.parse::<rnic_sim::BridgeSpec>().map_err(|e| bad(&spec.to_string(), e))?;
                Ok(Rc::new(crate::sim::port_device(&bridge, rnic_sim::SimConfig::default(), 0)?))
            }
            #[cfg(not(feature = "sim"))]
            {
                let _ = port;
                Err(OpenError::NotBuilt { backend: "sim", feature: "sim" }.into())
            }
        }
        DeviceSpec::VfioUser(path) => {
            #[cfg(feature = "vfio-user")]
            {
                Ok(Rc::new(VfioUserDevice::open(path)?))
            }
            #[cfg(not(feature = "vfio-user"))]
            {
                let _ = path;
                Err(OpenError::NotBuilt { backend: "vfio-user", feature: "vfio-user" }.into())
            }
        }
        DeviceSpec::Vfio(bdf) => {
            #[cfg(feature = "vfio")]
            {
                Ok(Rc::new(VfioDevice::open(bdf)?))
            }
            #[cfg(not(feature = "vfio"))]
            {
                let _ = bdf;
                Err(OpenError::NotBuilt { backend: "vfio", feature: "vfio" }.into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Errno;

    #[test]
    fn device_strings_parse_or_say_what_is_wrong() {
        assert_eq!("sim".parse::<DeviceSpec>().unwrap(), DeviceSpec::Sim);
        assert_eq!(
            "sim-port:simbricks-listen:/tmp/l.sock".parse::<DeviceSpec>().unwrap(),
            DeviceSpec::SimPort("simbricks-listen:/tmp/l.sock".into())
        );
        assert_eq!(
            "vfio-user:/tmp/d/nic0.sock".parse::<DeviceSpec>().unwrap(),
            DeviceSpec::VfioUser("/tmp/d/nic0.sock".into())
        );
        assert_eq!("vfio:0000:03:00.0".parse::<DeviceSpec>().unwrap(), DeviceSpec::Vfio("0000:03:00.0".into()));
        assert_eq!("vfio:3B:1f.7".parse::<DeviceSpec>().unwrap(), DeviceSpec::Vfio("0000:3b:1f.7".into()));
        for (s, says) in [
            ("", "unknown backend"),
            ("vfio-user:", "no socket path"),
            ("vfio:03:00", "not a PCI address"),
            ("vfio:0000:03:20.0", "not a PCI address"),
            ("vfio:0000:03:00.8", "not a PCI address"),
            ("pcie:1", "unknown backend"),
            ("sim-port:", "no port after sim-port:"),
        ] {
            let e = Error::from(s.parse::<DeviceSpec>().unwrap_err());
            assert_eq!(e.errno(), Errno::EINVAL, "{s}");
            let m = e.to_string();
            assert!(m.contains(says) && m.contains("hint:"), "{s}: {m}");
        }
        assert_eq!(DeviceSpec::Vfio("0000:03:00.0".into()).to_string(), "vfio:0000:03:00.0");
        #[cfg(feature = "sim")]
        {
            let e = Error::from("sim-port:pipe:/x".parse::<DeviceSpec>().unwrap_err()).to_string();
            assert!(e.contains("unknown bridge kind") && e.contains("hint:"), "{e}");
        }
    }

    #[test]
    fn open_errors_carry_errno_and_hint() {
        let cases: Vec<(OpenError, Errno, &str)> = vec![
            (OpenError::SocketMissing { path: "/x/nic0.sock".into() }, Errno::ENOENT, "rnic sim serve"),
            (OpenError::ConnectionRefused { path: "/x/nic0.sock".into() }, Errno::ECONNREFUSED, "has exited"),
            (OpenError::ServerBusy { path: "/x".into(), seconds: 10 }, Errno::EBUSY, "one client at a time"),
            (OpenError::NoIommuGroup { bdf: "0000:03:00.0".into() }, Errno::ENODEV, "intel_iommu=on"),
            (
                OpenError::NotBoundToVfio { bdf: "0000:03:00.0".into(), driver: Some("mlx5_core".into()) },
                Errno::ENODEV,
                "/sys/bus/pci/drivers/mlx5_core/unbind",
            ),
            (
                OpenError::NotBoundToVfio { bdf: "0000:03:00.0".into(), driver: None },
                Errno::ENODEV,
                "bound to no driver",
            ),
            (OpenError::VfioPermission { path: "/dev/vfio/7".into() }, Errno::EACCES, "chown $USER /dev/vfio/7"),
            (OpenError::MemlockLimit { limit_kib: 8192, needed_kib: 65536 }, Errno::ENOMEM, "ulimit -l"),
            (
                OpenError::ContractVersion {
                    device: "d".into(),
                    version: 0x2_0000,
                    nic_major: 2,
                    nic_minor: 0,
                    driver_major: 0,
                },
                Errno::ENODEV,
                "same rnic revision",
            ),
            (OpenError::NotAnRnic { device: "d".into(), id: u32::MAX }, Errno::ENODEV, "all ones"),
            (OpenError::NotBuilt { backend: "vfio", feature: "vfio" }, Errno::EOPNOTSUPP, "cargo feature vfio"),
        ];
        for (e, errno, says) in cases {
            let e = Error::from(e);
            assert_eq!(e.errno(), errno, "{e}");
            let m = e.to_string();
            assert!(m.contains(says) && m.contains("hint:"), "{m}");
        }
    }

    #[cfg(not(feature = "vfio-user"))]
    #[test]
    fn a_backend_not_built_says_which_feature() {
        let e = open_device("vfio-user:/nowhere").err().unwrap();
        assert_eq!(e.errno(), Errno::EOPNOTSUPP);
        assert!(e.to_string().contains("vfio-user"), "{e}");
    }
}
