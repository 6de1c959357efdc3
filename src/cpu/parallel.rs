//! Splitting CPU work across threads, the calling thread taking part.
//!
//! rayon's `scope`/`join` called from a thread outside its pool (Python's)
//! hand the whole job to the pool and put the caller to sleep: every call
//! pays a worker's wake-up and then the caller's. Here the caller starts
//! right away on the pieces and the helpers (threads of our own, one fewer
//! than [`threads`]) join in as they take the job; the caller waits only
//! for pieces another thread has claimed (which are running), never for a
//! helper to wake. This is how OpenMP's master thread works in NumPy's and
//! torch's loops, and it keeps a 10^5-element loop from costing more on two
//! threads than on one.
//!
//! A helper spins for [`SPIN`] after each job before it parks, as OpenMP's
//! workers do (libgomp's for milliseconds). A rayon pool's worker slept
//! sooner: a loop of 10^5-element ops after a pause ran at one thread's
//! speed while it woke, and a new process's first 40 ms of ops (the
//! scheduler left the sleeper on the caller's core until it balanced)
//! too: `-x` on 10^5 float32, 8.6 µs a call there, 6.0 now.
//!
//! Each thread owns a contiguous share of the pieces (the caller the
//! first) and claims its own before taking what is left of the others', so
//! that consecutive loops over the same range, as a cast and the op that
//! reads it, give each element to the same thread, as OpenMP's static
//! schedule does: with one shared counter, whichever thread woke first took
//! the front, and `a / b` on int32 (two casts, then the division) ran 2 to 4x
//! slower on two threads than on one, its temporaries moving between cores.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Threads for large loops, the caller's included: `DLBRIDGE_NUM_THREADS`,
/// else the cores this process may use.
pub(crate) fn threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::env::var("DLBRIDGE_NUM_THREADS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    })
}

/// How long a helper spins for its next job before it sleeps: back-to-back
/// ops (a Python loop over 10^5-element tensors) find it awake, as
/// OpenMP's spinning workers are found in NumPy's and torch's loops.
const SPIN: std::time::Duration = std::time::Duration::from_micros(200);

/// One helper thread: `threads() - 1` of them, since the calling thread is
/// the other one. Its mailbox holds one job, the newest: an owner runs
/// whatever no helper claimed itself, so a job replaced before a helper took
/// it (or posted to a helper a `fork` left behind) costs nothing but a
/// thread's help. (A `fork` taken while another thread held a mailbox's
/// lock, inside `post`, leaves it held in the child, whose next parallel
/// loop would then wait forever: the window is a few instructions, as for
/// any lock; rayon's pool had the same.)
struct Helper {
    mailbox: std::sync::Mutex<Option<(Arc<Job>, usize)>>,
    /// The mailbox is full: what the spinning helper reads.
    posted: AtomicBool,
    /// Running a job: an owner looks for idle helpers first.
    busy: AtomicBool,
    /// Parked (or about to be): the poster unparks it.
    asleep: AtomicBool,
    thread: std::sync::OnceLock<std::thread::Thread>,
}

std::thread_local! {
    /// This thread's index among the helpers, if it is one.
    static HELPER_INDEX: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// The helpers, started on first use.
fn helpers() -> &'static [Helper] {
    static SLICE: std::sync::OnceLock<&'static [Helper]> = std::sync::OnceLock::new();
    SLICE.get_or_init(|| {
        let all: &'static [Helper] = Vec::leak(
            (1..threads())
                .map(|_| Helper {
                    mailbox: std::sync::Mutex::new(None),
                    posted: AtomicBool::new(false),
                    busy: AtomicBool::new(false),
                    asleep: AtomicBool::new(false),
                    thread: std::sync::OnceLock::new(),
                })
                .collect(),
        );
        for (i, h) in all.iter().enumerate() {
            let spawned = std::thread::Builder::new()
                .name(format!("dlbridge-cpu-{i}"))
                .spawn(move || serve(h, i));
            // A helper that cannot start never gets the `thread` it would
            // be unparked by, and `for_each` skips it.
            if let Ok(handle) = spawned {
                let _ = h.thread.set(handle.thread().clone());
            }
        }
        all
    })
}

/// A helper's life: run what its mailbox receives, spinning for [`SPIN`]
/// after each job, then parked until the next.
fn serve(me: &'static Helper, index: usize) {
    HELPER_INDEX.with(|c| c.set(Some(index)));
    loop {
        let mut idle_since = std::time::Instant::now();
        let mut spins = 0u32;
        while !me.posted.load(Ordering::Acquire) {
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(256) && idle_since.elapsed() > SPIN {
                // Dekker's handshake with `post` (both sequentially
                // consistent): either this sees the post or `post` sees
                // `asleep` and unparks.
                me.asleep.store(true, Ordering::SeqCst);
                if !me.posted.load(Ordering::SeqCst) {
                    std::thread::park();
                }
                me.asleep.store(false, Ordering::SeqCst);
                idle_since = std::time::Instant::now();
            }
        }
        let job = {
            let mut mailbox = me.mailbox.lock().unwrap_or_else(|e| e.into_inner());
            me.posted.store(false, Ordering::Relaxed);
            mailbox.take()
        };
        if let Some((job, t)) = job {
            me.busy.store(true, Ordering::Relaxed);
            job.run(t);
            me.busy.store(false, Ordering::Relaxed);
        }
    }
}

impl Helper {
    /// Hands `job`'s share `t` to this helper, waking it if it sleeps.
    fn post(&self, job: Arc<Job>, t: usize) {
        *self.mailbox.lock().unwrap_or_else(|e| e.into_inner()) = Some((job, t));
        self.posted.store(true, Ordering::SeqCst);
        if self.asleep.load(Ordering::SeqCst)
            && let Some(thread) = self.thread.get()
        {
            thread.unpark();
        }
    }
}

/// A type-erased `Fn(piece)` whose borrow the helpers may outlive: they
/// only call it after claiming a piece, and the owner waits for every
/// claimed piece before the borrow ends.
struct Job {
    /// The next unclaimed piece of each thread's share (thread `t` owns
    /// [`share`]`(t, ..)`; the caller is thread 0), each on cache lines of
    /// its own, so that a thread's claims do not move the line another
    /// thread claims from.
    next: Vec<Padded>,
    /// Pieces finished, each thread adding its count once when it is out of
    /// pieces.
    done: Padded,
    pieces: usize,
    panicked: AtomicBool,
    part: *const (dyn Fn(usize) + Sync + 'static),
}

/// An atomic counter alone on its pair of cache lines (the unit the
/// adjacent-line prefetcher moves).
#[repr(align(128))]
struct Padded(AtomicUsize);

// SAFETY: `part` is Sync and is only called while its owner waits in
// `for_each` (see `run`); the counters are atomics.
unsafe impl Send for Job {}
// SAFETY: as above.
unsafe impl Sync for Job {}

/// The pieces thread `t` of `threads` owns: the `t`-th of near-equal
/// contiguous shares of `0..pieces`.
fn share(t: usize, threads: usize, pieces: usize) -> std::ops::Range<usize> {
    t * pieces / threads..(t + 1) * pieces / threads
}

impl Job {
    /// Claims and runs the pieces of thread `t`'s share, then those left
    /// in the others' (the next thread's first), until none is left.
    fn run(&self, t: usize) {
        let threads = self.next.len();
        let mut ran = 0;
        for s in (0..threads).map(|k| (t + k) % threads) {
            let end = share(s, threads, self.pieces).end;
            loop {
                let i = self.next[s].0.fetch_add(1, Ordering::Relaxed);
                if i >= end {
                    break;
                }
                // SAFETY: piece i is claimed and not yet counted done, so the
                // owner is still waiting in `for_each` and `part` is alive.
                let part = unsafe { &*self.part };
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| part(i))).is_err() {
                    self.panicked.store(true, Ordering::Relaxed);
                }
                ran += 1;
            }
        }
        self.done.0.fetch_add(ran, Ordering::Release);
    }
}

/// Runs `f(i)` for every `i` in `0..pieces`, on this thread and, when
/// `pieces > 1` and more threads are allowed, on idle helpers as they take
/// it. Returns once every piece has run; a panic in a piece is raised here.
/// Nested calls (from a piece, on a helper or not) post to the helpers
/// that are idle and never wait for one to become free.
pub(crate) fn for_each(pieces: usize, f: impl Fn(usize) + Sync) {
    if cfg!(miri) || pieces < 2 || threads() == 1 {
        return (0..pieces).for_each(f);
    }
    let me = HELPER_INDEX.with(|c| c.get());
    let wanted = threads().min(pieces) - 1;
    let mut chosen = Vec::with_capacity(wanted);
    for (i, h) in helpers().iter().enumerate() {
        if chosen.len() == wanted {
            break;
        }
        if Some(i) != me && !h.busy.load(Ordering::Relaxed) && h.thread.get().is_some() {
            chosen.push(h);
        }
    }
    if chosen.is_empty() {
        return (0..pieces).for_each(f);
    }
    let part: &(dyn Fn(usize) + Sync) = &f;
    // SAFETY: only the lifetime is erased; `Job::run` calls `part` for
    // claimed pieces alone, and this function returns (and `f` drops) only
    // after every claimed piece is done (`pieces` claims all there are).
    let part: *const (dyn Fn(usize) + Sync + 'static) = unsafe { std::mem::transmute(part) };
    let threads = chosen.len() + 1;
    let job = Arc::new(Job {
        next: (0..threads)
            .map(|t| Padded(AtomicUsize::new(share(t, threads, pieces).start)))
            .collect(),
        done: Padded(AtomicUsize::new(0)),
        pieces,
        panicked: AtomicBool::new(false),
        part,
    });
    for (t, h) in chosen.into_iter().enumerate() {
        h.post(Arc::clone(&job), t + 1);
    }
    job.run(0);
    // Every piece is claimed now; wait for those still running elsewhere.
    let mut spins = 0u32;
    while job.done.0.load(Ordering::Acquire) < pieces {
        if spins < 1 << 12 {
            std::hint::spin_loop();
            spins += 1;
        } else {
            std::thread::yield_now();
        }
    }
    if job.panicked.load(Ordering::Relaxed) {
        panic!("a parallel CPU loop panicked");
    }
}

/// `(a(), b())`, the two possibly on two threads (this one runs whichever
/// it claims first; results do not depend on which).
pub(crate) fn join<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    let (fa, fb) = (
        std::sync::Mutex::new(Some(a)),
        std::sync::Mutex::new(Some(b)),
    );
    let (ra, rb) = (std::sync::Mutex::new(None), std::sync::Mutex::new(None));
    for_each(2, |i| {
        if i == 0 {
            let f = fa.lock().unwrap().take().expect("run once");
            *ra.lock().unwrap() = Some(f());
        } else {
            let f = fb.lock().unwrap().take().expect("run once");
            *rb.lock().unwrap() = Some(f());
        }
    });
    let a = ra.into_inner().unwrap().expect("piece 0 ran");
    let b = rb.into_inner().unwrap().expect("piece 1 ran");
    (a, b)
}

/// Calls `part(start, end)` over `0..n` in pieces of whole multiples of
/// `align` elements, threaded from `min` elements on.
pub(crate) fn for_range(n: usize, min: usize, align: usize, part: impl Fn(usize, usize) + Sync) {
    // The size first: a small loop never starts the helpers.
    if n < min || cfg!(miri) || threads() == 1 {
        return part(0, n);
    }
    let threads = threads();
    // A few pieces per thread, so a thread that starts late takes fewer.
    let chunk = n.div_ceil(threads * 4).next_multiple_of(align).max(min / 4);
    let pieces = n.div_ceil(chunk);
    for_each(pieces, |i| part(i * chunk, ((i + 1) * chunk).min(n)));
}

/// From this many elements on, a loop splits across threads (PyTorch's
/// grain size). With the caller taking part (above), a split costs
/// it the wake-up call of a worker: on a busy 2-core machine 2 threads ran at
/// most 0.8 µs slower than 1 below 2^17 elements and even above. Where a
/// second core is free it should about halve the loop; the crossover was not
/// measured on a quiet machine (none was available).
const PARALLEL_THRESHOLD: usize = 1 << 15;

/// Raw pointers that threads may share: each writes its own range.
#[derive(Clone, Copy)]
pub(crate) struct Shared<T>(pub(crate) T);
// SAFETY: the loops hand each thread a disjoint range of output elements;
// inputs are only read.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Shared<T> {}

/// Runs `part(start, end)` over `0..n` elements of `T` (an elementwise loop),
/// split across threads when large (pieces of whole cache lines, so threads never share
/// one). One-byte elements (bool, int8) split from 4 times as many: `a == b`
/// on 10^5 bools took 3.6 µs on two threads against 2.7 on one (NumPy 2.8).
pub(crate) fn for_elements<T>(n: usize, part: impl Fn(usize, usize) + Sync) {
    for_range(n, grain::<T>(), 64, part)
}

/// The elements of `T` from which an elementwise loop of plain arithmetic
/// splits across threads (see [`for_elements`]); a loop whose element costs
/// `c` times as much splits from `grain / c`.
pub(crate) fn grain<T>() -> usize {
    if size_of::<T>() == 1 {
        PARALLEL_THRESHOLD * 4
    } else {
        PARALLEL_THRESHOLD
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_piece_runs_once() {
        // Piece counts below, at and above the thread count, and uneven
        // shares (each thread's share is claimed by it and by the others).
        for pieces in [2, 3, 5, 37, 64] {
            let hits: Vec<AtomicUsize> = (0..pieces).map(|_| AtomicUsize::new(0)).collect();
            for_each(pieces, |i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
        }
        let seen = std::sync::Mutex::new(vec![]);
        for_range(1000, 10, 64, |s, e| seen.lock().unwrap().push((s, e)));
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        assert_eq!(seen.first().unwrap().0, 0);
        assert_eq!(seen.last().unwrap().1, 1000);
        assert!(seen.windows(2).all(|w| w[0].1 == w[1].0));
        assert_eq!(join(|| 1, || "b"), (1, "b"));
    }

    /// Loops nested in pieces (on the caller and on helpers) and loops
    /// from several threads at once share the helpers without deadlock,
    /// each piece once; after a pause past `SPIN` the parked helpers wake.
    #[test]
    fn nested_and_concurrent_loops_each_run_every_piece_once() {
        let total = AtomicUsize::new(0);
        let nested = || {
            for_each(7, |_| {
                for_each(5, |_| {
                    total.fetch_add(1, Ordering::Relaxed);
                })
            })
        };
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| (0..50).for_each(|_| nested()));
            }
        });
        assert_eq!(total.load(Ordering::Relaxed), 4 * 50 * 7 * 5);
        std::thread::sleep(SPIN * 5);
        let hits = AtomicUsize::new(0);
        for_each(64, |_| {
            hits.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(hits.load(Ordering::Relaxed), 64);
    }
}
