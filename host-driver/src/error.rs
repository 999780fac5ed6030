//! The driver's error type, with the errno each verb would return in rdma-core.

/// The POSIX error numbers the verbs report (Linux values), as rdma-core's `ibv_*` calls return
/// them in `errno` or as a negative return value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Errno {
    /// No such file or directory (a device path that does not exist).
    ENOENT = 2,
    /// I/O error: the device did not answer or answered with an error.
    EIO = 5,
    /// Out of memory or queue full (`ibv_post_send` on a full SQ, no free table entry).
    ENOMEM = 12,
    /// Permission denied (a device node this user cannot open).
    EACCES = 13,
    /// Resource busy (an object still in use, the simulator borrowed elsewhere).
    EBUSY = 16,
    /// No such device, or a device this driver is not compatible with.
    ENODEV = 19,
    /// Invalid argument (bad attribute mask, state, key, range...).
    EINVAL = 22,
    /// Operation not supported by this device.
    EOPNOTSUPP = 95,
    /// A bounded wait ran out of time.
    ETIMEDOUT = 110,
    /// Connection refused (a device socket nobody listens on).
    ECONNREFUSED = 111,
}

/// How a device backend failed ([`Error::Io`], EIO), so that a program can tell a device that
/// stopped answering from one that refused an access without reading messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IoKind {
    /// An MMIO read or write of BAR0 was not answered within the backend's limit (on PCIe: a
    /// completion timeout; in the simulator: no AXI response within its cycle limit).
    MmioTimeout,
    /// An MMIO was answered with an error response (AXI SLVERR or DECERR; on PCIe an
    /// Unsupported Request or Completer Abort).
    MmioErrorResponse,
    /// The device went away under an access: it was reset (or removed) while the MMIO was in
    /// flight.
    DeviceLost,
    /// A file the backend writes for the user (a pcap capture, a waveform dump) could not be
    /// created or written.
    File,
    /// The backend itself failed: the device model could not be built or started (simulator ABI
    /// mismatch, model construction), or a bounded wait of the backend ran out.
    Backend,
}

/// Everything a verb can fail with. Every variant carries a message saying what was wrong and
/// what was expected; [`Error::errno`] gives the errno an ibverbs program would see.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// EINVAL: an argument, attribute mask or object state is not allowed.
    #[error("EINVAL: {0}")]
    InvalidArgument(String),
    /// ENOMEM: a queue is full or a table has no free entry.
    #[error("ENOMEM: {0}")]
    NoMemory(String),
    /// EBUSY: the resource is in use.
    #[error("EBUSY: {0}")]
    Busy(String),
    /// EOPNOTSUPP: valid in ibverbs, but not implemented by this device.
    #[error("EOPNOTSUPP: {0}")]
    NotSupported(String),
    /// ENODEV: the device is missing or speaks another contract.
    #[error("ENODEV: {0}")]
    NoDevice(String),
    /// ETIMEDOUT: a bounded wait ended before the condition held.
    #[error("ETIMEDOUT: {0}")]
    TimedOut(String),
    /// A device could not be opened ([`crate::backend::open_device`], [`crate::Context::open`]):
    /// the [`OpenError`](crate::backend::OpenError) names the cause and a hint; its errno depends
    /// on the cause (ENOENT, ECONNREFUSED, EACCES, ENODEV...).
    #[error("{0}")]
    Open(crate::backend::OpenError),
    /// EIO: the device backend failed; `kind` says how (MMIO not answered, answered with an
    /// error, the device lost, a capture file not written...).
    #[error("EIO: {context}: {source}")]
    Io {
        /// How the backend failed, for programs that react to it (retry, reopen, give up).
        kind: IoKind,
        /// What the driver was doing.
        context: String,
        /// The backend's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
}

impl Error {
    /// The errno rdma-core would report for this error.
    pub fn errno(&self) -> Errno {
        match self {
            Error::InvalidArgument(_) => Errno::EINVAL,
            Error::NoMemory(_) => Errno::ENOMEM,
            Error::Busy(_) => Errno::EBUSY,
            Error::NotSupported(_) => Errno::EOPNOTSUPP,
            Error::NoDevice(_) => Errno::ENODEV,
            Error::TimedOut(_) => Errno::ETIMEDOUT,
            Error::Io { .. } => Errno::EIO,
            Error::Open(e) => {
                use crate::backend::OpenError as O;
                match e {
                    O::BadSpec { .. } => Errno::EINVAL,
                    O::NotBuilt { .. } => Errno::EOPNOTSUPP,
                    O::SocketMissing { .. } => Errno::ENOENT,
                    O::ConnectionRefused { .. } => Errno::ECONNREFUSED,
                    O::ServerBusy { .. } => Errno::EBUSY,
                    O::VfioPermission { .. } => Errno::EACCES,
                    O::MemlockLimit { .. } => Errno::ENOMEM,
                    O::Protocol { .. } | O::Vfio { .. } => Errno::EIO,
                    O::NoSuchPciDevice { .. }
                    | O::NoIommuGroup { .. }
                    | O::NotBoundToVfio { .. }
                    | O::NotAnRnic { .. }
                    | O::ContractVersion { .. } => Errno::ENODEV,
                }
            }
        }
    }

    /// The kind of an [`Error::Io`]; `None` for the other variants.
    pub fn io_kind(&self) -> Option<IoKind> {
        match self {
            Error::Io { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// An [`Error::Io`] of `kind` wrapping a backend error, with what the driver was doing.
    pub fn io(
        kind: IoKind,
        context: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::Io { kind, context: context.into(), source: Box::new(source) }
    }

    pub(crate) fn inval(msg: impl Into<String>) -> Self {
        Error::InvalidArgument(msg.into())
    }
}

/// A list verb (`post_send`, `post_recv`, `post_srq_recv`) that stopped at one work request,
/// as ibverbs reports it through `bad_wr` (ibv_post_send(3)): the work requests before
/// [`bad_wr`](Self::bad_wr) were posted (the NIC has them), that one and every later one were
/// not. Converts into the [`Error`] it carries, so `?` works in functions returning
/// [`Result`].
#[derive(Debug)]
pub struct PostError {
    /// Index in the list of the first work request that was not posted.
    pub bad_wr: usize,
    /// Why it was not posted.
    pub error: Error,
}

impl PostError {
    /// The errno rdma-core would return (see [`Error::errno`]).
    pub fn errno(&self) -> Errno {
        self.error.errno()
    }
}

impl std::fmt::Display for PostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "work request {} not posted (the {} before it were): {}", self.bad_wr, self.bad_wr, self.error)
    }
}

impl std::error::Error for PostError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl From<PostError> for Error {
    fn from(e: PostError) -> Self {
        e.error
    }
}

/// A destroy verb that was refused (`EBUSY` in ibverbs: `ibv_dealloc_pd(3)` of a PD that still
/// has memory regions, QPs or SRQs, `ibv_destroy_cq(3)` of a CQ with QPs attached,
/// `ibv_destroy_srq(3)` of an SRQ with QPs): the object comes back unchanged, still usable.
pub struct Refused<T> {
    /// The object, as it was.
    pub object: T,
    /// Why (an [`Error::Busy`] naming what still uses it).
    pub error: Error,
}

impl<T> Refused<T> {
    pub(crate) fn busy(object: T, msg: impl Into<String>) -> Self {
        Self { object, error: Error::Busy(msg.into()) }
    }

    /// The errno rdma-core would return (EBUSY).
    pub fn errno(&self) -> Errno {
        self.error.errno()
    }
}

impl<T> std::fmt::Debug for Refused<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Refused").field("error", &self.error).finish_non_exhaustive()
    }
}

impl<T> std::fmt::Display for Refused<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl<T> std::error::Error for Refused<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl<T> From<Refused<T>> for Error {
    fn from(e: Refused<T>) -> Self {
        e.error
    }
}

/// `Result<T, rnic::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
