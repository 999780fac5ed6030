//! A small gang of worker threads for stepping lanes in parallel, built for very short jobs: a
//! driver steps the world one cycle at a time (a few µs of work per NIC), so handing work over
//! must cost far less than a thread wake-up. The caller runs part 0 itself; each worker waits
//! for the next job by spinning briefly, then yielding, then parking, and the caller waits for
//! the workers the same way.
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A job: `run(k)` does part `k` (part 0 on the caller, part `w + 1` on worker `w`).
type Job = *const (dyn Fn(usize) + Sync);

struct Shared {
    /// Incremented for every job; workers run a job when it changes.
    epoch: AtomicU64,
    /// Workers done with the current job.
    done: AtomicUsize,
    /// A worker panicked on the current job.
    panicked: AtomicBool,
    shutdown: AtomicBool,
    /// The current job; written by the caller before `epoch` is incremented (release), read by
    /// workers after they see the new epoch (acquire).
    job: UnsafeCell<Option<Job>>,
    parked: Vec<AtomicBool>,
}

// SAFETY: `job` is written only by the caller while no worker reads it (every worker has
// reported `done` for the previous epoch and the new epoch is not yet published), and read by
// workers only between seeing an epoch and reporting `done`; the pointee is `Sync`.
unsafe impl Sync for Shared {}
// SAFETY: as above; the raw pointer is only a handle to a `Sync` closure.
unsafe impl Send for Shared {}

/// Worker threads for [`Gang::run`].
pub(super) struct Gang {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Gang {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gang").field("workers", &self.workers.len()).finish()
    }
}

/// Waits for `ready`: spins for a few µs, then yields (other processes may need the core),
/// then sleeps or parks.
fn wait(mut ready: impl FnMut() -> bool, mut idle: impl FnMut()) {
    let t0 = Instant::now();
    let mut n = 0u32;
    while !ready() {
        n += 1;
        if n < 256 {
            std::hint::spin_loop();
        } else if t0.elapsed() < Duration::from_millis(2) {
            std::thread::yield_now();
        } else {
            idle();
        }
    }
}

impl Gang {
    /// `workers` threads (the caller makes one more).
    pub(super) fn new(workers: usize) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            epoch: AtomicU64::new(0),
            done: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            job: UnsafeCell::new(None),
            parked: (0..workers).map(|_| AtomicBool::new(false)).collect(),
        });
        let mut handles = Vec::new();
        for w in 0..workers {
            let s = Arc::clone(&shared);
            let h = std::thread::Builder::new().name(format!("rnic-sim-{}", w + 1)).spawn(move || {
                let mut seen = 0u64;
                loop {
                    wait(
                        || s.epoch.load(Ordering::Acquire) != seen || s.shutdown.load(Ordering::Acquire),
                        || {
                            s.parked[w].store(true, Ordering::SeqCst);
                            if s.epoch.load(Ordering::SeqCst) == seen && !s.shutdown.load(Ordering::SeqCst) {
                                std::thread::park_timeout(Duration::from_millis(50));
                            }
                            s.parked[w].store(false, Ordering::SeqCst);
                        },
                    );
                    if s.shutdown.load(Ordering::Acquire) {
                        return;
                    }
                    seen = s.epoch.load(Ordering::Acquire);
                    // SAFETY: see `Shared`: the job is set for this epoch and stays valid until
                    // this worker reports done.
                    let job = unsafe { *s.job.get() };
                    if let Some(job) = job {
                        // SAFETY: the caller keeps the closure alive until every worker is done.
                        let f = unsafe { &*job };
                        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(w + 1))).is_err() {
                            s.panicked.store(true, Ordering::Release);
                        }
                    }
                    s.done.fetch_add(1, Ordering::AcqRel);
                }
            })?;
            handles.push(h);
        }
        Ok(Self { shared, workers: handles })
    }

    /// Threads including the caller.
    pub(super) fn threads(&self) -> usize {
        self.workers.len() + 1
    }

    /// Runs `f(0)` on the calling thread and `f(1)` … `f(workers)` on the workers, and returns
    /// when all are done.
    ///
    /// # Panics
    /// If `f` panicked on a worker (the panic is re-raised here).
    pub(super) fn run(&self, f: &(dyn Fn(usize) + Sync)) {
        let s = &*self.shared;
        // SAFETY: every worker reported done for the previous job, so none reads `job`; the
        // pointer is erased to 'static only for storage, and cleared before `run` returns,
        // while `f` is still borrowed.
        unsafe {
            let p: *const (dyn Fn(usize) + Sync + '_) = f;
            *s.job.get() = Some(std::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), Job>(p));
        }
        s.done.store(0, Ordering::Release);
        s.epoch.fetch_add(1, Ordering::SeqCst);
        for (w, h) in self.workers.iter().enumerate() {
            if s.parked[w].load(Ordering::SeqCst) {
                h.thread().unpark();
            }
        }
        let mine = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(0)));
        let n = self.workers.len();
        wait(|| s.done.load(Ordering::Acquire) == n, || std::thread::sleep(Duration::from_micros(20)));
        // SAFETY: all workers are done with this job.
        unsafe { *s.job.get() = None };
        if let Err(p) = mine {
            std::panic::resume_unwind(p);
        }
        if s.panicked.swap(false, Ordering::AcqRel) {
            panic!("a simulator thread panicked");
        }
    }
}

impl Drop for Gang {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        for h in &self.workers {
            h.thread().unpark();
        }
        for h in self.workers.drain(..) {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn every_part_runs_once_per_job_and_results_are_visible_after() {
        let gang = Gang::new(3).unwrap();
        assert_eq!(gang.threads(), 4);
        let cells: Vec<Mutex<u64>> = (0..4).map(|_| Mutex::new(0)).collect();
        for round in 1..=2000u64 {
            gang.run(&|k| *cells[k].lock().unwrap() += round);
        }
        for c in &cells {
            assert_eq!(*c.lock().unwrap(), 2000 * 2001 / 2);
        }
        // Workers park after a while and still wake for the next job.
        std::thread::sleep(Duration::from_millis(20));
        gang.run(&|k| *cells[k].lock().unwrap() = 7);
        assert!(cells.iter().all(|c| *c.lock().unwrap() == 7));
    }

    #[test]
    fn a_panic_on_a_worker_reaches_the_caller() {
        let gang = Gang::new(1).unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| gang.run(&|k| assert_ne!(k, 1))));
        assert!(r.is_err());
        gang.run(&|_| {});
    }
}
