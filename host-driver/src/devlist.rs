//! `ibv_get_device_list(3)` over every backend: a device string names a backend and its
//! argument, each backend lists the devices it offers, and [`DeviceList::open`] opens one
//! as a [`Context`] with its port address set.
//!
//! Device strings (`RNIC_DEVICE`, `--device`), comma-separated for several:
//!
//! | string | devices | backend |
//! |---|---|---|
//! | `sim` | one in-process simulated NIC whose Ethernet port is looped back to itself (two QPs of the one device talk to each other) | feature `sim` |
//! | `sim:N` | N in-process simulated NICs of one world, cabled back to back in pairs (0↔1, 2↔3, …) | feature `sim` |
//! | `sim-port:SPEC` | one in-process simulated NIC whose Ethernet port is attached to SPEC: a SimBricks link to another process (`simbricks:PATH`, `simbricks-listen:PATH`) or a bridge (`udp:…`, `tcp:…`, `tap:NAME`; docs/interop.md) | feature `sim` |
//! | `vfio-user:PATH` | the NIC behind a vfio-user socket (`rnic sim serve`; docs/pcie.md) | feature `vfio-user` |
//! | `vfio:DDDD:BB:DD.F` | a PCI function bound to vfio-pci: a board, or a NIC in a QEMU guest | feature `vfio` |
//!
//! A backend is a [`Backend`] in [`BACKENDS`]: a scheme (the part before the first `:`), a
//! `list` function turning its argument into [`DeviceEntry`]s and an `open` function; the
//! PCIe backends are opened through [`crate::open_device`]. Devices are named `rnic_0`, `rnic_1`, … in list order, as `mlx5_0` or `rxe0` name
//! theirs.
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use crate::context::{Context, CtxInner, PortAddr};
use crate::error::{Error, Result};
use crate::query::eui64;

/// The environment variable holding the device string ([`DeviceList::from_env`]).
pub use crate::backend::DEVICE_ENV;

/// The device string used when [`DEVICE_ENV`] is unset: `sim` with the simulator backend,
/// none without.
pub const DEFAULT_DEVICE: &str = if cfg!(feature = "sim") { "sim" } else { "" };

/// One device a backend offers (`struct ibv_device`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceEntry {
    /// The device name (`ibv_get_device_name(3)`): `rnic_<index in the list>`.
    pub name: String,
    /// The device string of the backend that offers it (`sim:2`).
    pub spec: String,
    /// The backend's scheme (`sim`).
    pub scheme: &'static str,
    /// Index among the backend's devices of that string.
    pub index: usize,
    /// The port address [`DeviceList::open`] gives the device.
    pub port: PortAddr,
    /// The node GUID (`ibv_get_device_guid(3)`): the EUI-64 of the port MAC, as a number.
    pub guid: u64,
}

/// State a backend keeps for the devices of one device string while a [`DeviceList`] lives
/// (the simulated world its NICs share).
pub type BackendState = Box<dyn std::any::Any>;

/// What a backend's `list` returns: `(index, port address)` of each device.
pub type ListFn = fn(arg: Option<&str>) -> Result<Vec<(usize, PortAddr)>>;

/// A device backend, enumerated by the scheme of a device string.
pub struct Backend {
    /// The scheme: the device string up to the first `:` (or all of it).
    pub scheme: &'static str,
    /// One line for help texts: the forms of the string it takes.
    pub usage: &'static str,
    /// The devices `arg` (the string after `scheme:`, or `None`) names, as `(index, port)`.
    pub list: ListFn,
    /// Opens device `index` of `arg`; `state` is the backend's state for this string (`None`
    /// the first time; the backend may fill it so later opens share it).
    pub open: fn(arg: Option<&str>, index: usize, state: &mut Option<BackendState>) -> Result<Context>,
}

/// The backends compiled in.
pub const BACKENDS: &[Backend] = &[
    #[cfg(feature = "sim")]
    Backend {
        scheme: "sim",
        usage: "sim (one NIC, port looped back) | sim:N (N NICs cabled back to back in pairs)",
        list: sim_backend::list,
        open: sim_backend::open,
    },
    #[cfg(feature = "sim")]
    Backend {
        scheme: "sim-port",
        usage: "sim-port:SPEC (one NIC, its port on a SimBricks link: simbricks:PATH | simbricks-listen:PATH, or a bridge: udp:… | tcp:… | tap:NAME)",
        list: sim_backend::list_port,
        open: sim_backend::open_port,
    },
    #[cfg(feature = "vfio-user")]
    Backend {
        scheme: "vfio-user",
        usage: "vfio-user:PATH (a NIC served by `rnic sim serve`)",
        list: pcie_backend::list_vfio_user,
        open: pcie_backend::open_vfio_user,
    },
    #[cfg(feature = "vfio")]
    Backend {
        scheme: "vfio",
        usage: "vfio:DDDD:BB:DD.F (a PCI function bound to vfio-pci)",
        list: pcie_backend::list_vfio,
        open: pcie_backend::open_vfio,
    },
];

/// The PCIe backends: one device per string, opened by [`crate::open_device`].
#[cfg(any(feature = "vfio-user", feature = "vfio"))]
mod pcie_backend {
    use super::BackendState;
    use crate::context::{Context, PortAddr};
    use crate::error::{Error, Result};

    fn arg_of(arg: Option<&str>, scheme: &str) -> Result<String> {
        arg.filter(|a| !a.is_empty())
            .map(|a| format!("{scheme}:{a}"))
            .ok_or_else(|| Error::inval(format!("device string {scheme}: needs an argument after the ':'")))
    }

    /// The port address: the simulated ports' rule for `…/nicK.sock` (`rnic sim serve` names
    /// its sockets so), else NIC 0's; a board gets its address from the host's configuration
    /// (`Context::set_port_addr`).
    fn port_for(spec: &str) -> PortAddr {
        let k = spec
            .rsplit('/')
            .next()
            .and_then(|f| f.strip_prefix("nic"))
            .and_then(|f| f.strip_suffix(".sock"))
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
        PortAddr::for_sim_nic(k)
    }

    #[cfg(feature = "vfio-user")]
    pub fn list_vfio_user(arg: Option<&str>) -> Result<Vec<(usize, PortAddr)>> {
        Ok(vec![(0, port_for(&arg_of(arg, "vfio-user")?))])
    }

    #[cfg(feature = "vfio-user")]
    pub fn open_vfio_user(arg: Option<&str>, _index: usize, _state: &mut Option<BackendState>) -> Result<Context> {
        Context::open_shared(crate::open_device(&arg_of(arg, "vfio-user")?)?)
    }

    #[cfg(feature = "vfio")]
    pub fn list_vfio(arg: Option<&str>) -> Result<Vec<(usize, PortAddr)>> {
        Ok(vec![(0, port_for(&arg_of(arg, "vfio")?))])
    }

    #[cfg(feature = "vfio")]
    pub fn open_vfio(arg: Option<&str>, _index: usize, _state: &mut Option<BackendState>) -> Result<Context> {
        Context::open_shared(crate::open_device(&arg_of(arg, "vfio")?)?)
    }
}

/// Splits a device string into its backend and argument.
fn backend_of(spec: &str) -> Result<(&'static Backend, Option<&str>)> {
    let (scheme, arg) = match spec.split_once(':') {
        Some((s, a)) => (s, Some(a)),
        None => (spec, None),
    };
    BACKENDS.iter().find(|b| b.scheme == scheme).map(|b| (b, arg)).ok_or_else(|| {
        let known: Vec<&str> = BACKENDS.iter().map(|b| b.usage).collect();
        Error::NoDevice(format!(
            "device string {spec:?}: no backend {scheme:?} in this build (known: {})",
            if known.is_empty() { "none".to_string() } else { known.join("; ") }
        ))
    })
}

/// The devices of one or more device strings (`ibv_get_device_list(3)`), and the state their
/// backends share between opens (the simulated world behind `sim:2`'s two devices).
pub struct DeviceList {
    entries: Vec<DeviceEntry>,
    state: RefCell<HashMap<String, Option<BackendState>>>,
    /// The context of each device while one is open: a second open shares it (one driver per
    /// NIC, so QP, CQ and key numbers stay unique).
    opened: RefCell<Vec<Weak<CtxInner>>>,
}

impl std::fmt::Debug for DeviceList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceList").field("entries", &self.entries).finish()
    }
}

impl DeviceList {
    /// The devices of `specs`, a comma-separated list of device strings (empty: none).
    ///
    /// # Errors
    /// [`Error::NoDevice`] for a string no backend takes, or the backend's error for a bad
    /// argument.
    pub fn new(specs: &str) -> Result<Self> {
        let mut entries = Vec::new();
        for spec in specs.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (b, arg) = backend_of(spec)?;
            for (index, port) in (b.list)(arg)? {
                entries.push(DeviceEntry {
                    name: format!("rnic_{}", entries.len()),
                    spec: spec.to_string(),
                    scheme: b.scheme,
                    index,
                    port,
                    guid: eui64(port.mac),
                });
            }
        }
        let opened = RefCell::new((0..entries.len()).map(|_| Weak::new()).collect());
        Ok(Self { entries, state: RefCell::new(HashMap::new()), opened })
    }

    /// The devices of `$RNIC_DEVICE`, or of [`DEFAULT_DEVICE`] when it is unset.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn from_env() -> Result<Self> {
        match std::env::var(DEVICE_ENV) {
            Ok(s) => Self::new(&s),
            Err(_) => Self::new(DEFAULT_DEVICE),
        }
    }

    /// The devices, in order.
    pub fn entries(&self) -> &[DeviceEntry] {
        &self.entries
    }

    /// Opens device `i` (`ibv_open_device(3)`) and gives its port the entry's address. Two
    /// devices of one device string share their backend's state (a simulated world). Opening
    /// a device that is open already returns another handle of the same context (its tables
    /// of QP, CQ and key numbers are the NIC's, so there is one per NIC).
    ///
    /// # Errors
    /// [`Error::NoDevice`] for an index past the list; the backend's and
    /// [`Context::open`]'s errors.
    pub fn open(&self, i: usize) -> Result<Context> {
        let e = self.entries.get(i).ok_or_else(|| Error::NoDevice(format!("device {i} of {}", self.entries.len())))?;
        if let Some(inner) = self.opened.borrow()[i].upgrade() {
            return Ok(Context { inner });
        }
        let (b, arg) = backend_of(&e.spec)?;
        let mut states = self.state.borrow_mut();
        let state = states.entry(e.spec.clone()).or_default();
        let ctx = (b.open)(arg, e.index, state)?;
        ctx.set_port_addr(e.port)?;
        self.opened.borrow_mut()[i] = Rc::downgrade(&ctx.inner);
        Ok(ctx)
    }
}

#[cfg(feature = "sim")]
mod sim_backend {
    use std::cell::RefCell;
    use std::rc::Rc;

    use rnic_sim::{SimConfig, Topology, World};

    use super::BackendState;
    use crate::context::{Context, PortAddr};
    use crate::error::{Error, Result};
    use crate::sim::{sim_error, SimDevice};

    /// Largest `sim:N`.
    const MAX_NICS: usize = 16;

    fn count(arg: Option<&str>) -> Result<usize> {
        match arg {
            None => Ok(1),
            Some(a) => a
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_NICS).contains(n))
                .ok_or_else(|| Error::inval(format!("device string sim:{a}: want sim:N with N in 1..={MAX_NICS}"))),
        }
    }

    pub(super) fn list(arg: Option<&str>) -> Result<Vec<(usize, PortAddr)>> {
        Ok((0..count(arg)?).map(|i| (i, PortAddr::for_sim_nic(i))).collect())
    }

    pub(super) fn open(arg: Option<&str>, index: usize, state: &mut Option<BackendState>) -> Result<Context> {
        let n = count(arg)?;
        let world = match state.as_ref().and_then(|s| s.downcast_ref::<Rc<RefCell<World>>>()) {
            Some(w) => Rc::clone(w),
            None => {
                let topology = if arg.is_none() { Topology::Loopback } else { Topology::BackToBack };
                let w = World::with_topology(n, SimConfig::default(), topology)
                    .map_err(|e| sim_error(format!("creating the simulated world of {n} NICs"), e))?;
                let w = Rc::new(RefCell::new(w));
                *state = Some(Box::new(Rc::clone(&w)));
                w
            }
        };
        Context::open(SimDevice::new(world, index)?.with_progress_cycles(8))
    }

    fn bridge(arg: Option<&str>) -> Result<rnic_sim::BridgeSpec> {
        let a = arg.unwrap_or_default();
        a.parse().map_err(|e| Error::inval(format!("device string sim-port:{a}: {e}")))
    }

    pub(super) fn list_port(arg: Option<&str>) -> Result<Vec<(usize, PortAddr)>> {
        bridge(arg)?;
        Ok(vec![(0, PortAddr::for_sim_nic(0))])
    }

    pub(super) fn open_port(arg: Option<&str>, _index: usize, _state: &mut Option<BackendState>) -> Result<Context> {
        Context::open(crate::sim::port_device(&bridge(arg)?, SimConfig::default(), 0)?)
    }
}

/// The devices of `$RNIC_DEVICE` (or [`DEFAULT_DEVICE`]): [`DeviceList::from_env`].
///
/// # Errors
/// As [`DeviceList::new`].
pub fn get_device_list() -> Result<DeviceList> {
    DeviceList::from_env()
}
