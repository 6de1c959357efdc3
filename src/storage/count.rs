//! How many storages are alive (the leak tests read it), counted without a
//! locked instruction on the hot paths: each thread counts in its own cell,
//! which only it writes (a plain load and store), and a read sums them all.
//! A storage dropped on another thread than the one that made it moves that
//! thread's count down; the sum stays right. An exiting thread folds its
//! count into `RETIRED`, so cells do not pile up with thread churn.

use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::{Arc, Mutex};

/// Every live thread's cell, and the counts of threads gone.
static CELLS: Mutex<Vec<Arc<AtomicIsize>>> = Mutex::new(Vec::new());
static RETIRED: AtomicIsize = AtomicIsize::new(0);

struct Cell(Arc<AtomicIsize>);

impl Drop for Cell {
    fn drop(&mut self) {
        let mut cells = CELLS.lock().unwrap_or_else(|e| e.into_inner());
        RETIRED.fetch_add(self.0.load(Ordering::Relaxed), Ordering::Relaxed);
        cells.retain(|c| !Arc::ptr_eq(c, &self.0));
    }
}

thread_local! {
    static MINE: Cell = {
        let cell = Arc::new(AtomicIsize::new(0));
        CELLS.lock().unwrap_or_else(|e| e.into_inner()).push(cell.clone());
        Cell(cell)
    };
}

/// Adds `delta` to this thread's count.
pub(super) fn add(delta: isize) {
    let counted = MINE.try_with(|Cell(c)| {
        // Only this thread writes its cell: no read-modify-write needed.
        c.store(c.load(Ordering::Relaxed) + delta, Ordering::Relaxed)
    });
    if counted.is_err() {
        // The thread is tearing down its locals (a storage dropped by a
        // thread-local destructor): count straight into the retired total.
        RETIRED.fetch_add(delta, Ordering::Relaxed);
    }
}

/// The sum over every thread, past and present.
pub(super) fn total() -> isize {
    let cells = CELLS.lock().unwrap_or_else(|e| e.into_inner());
    cells
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum::<isize>()
        + RETIRED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_survive_their_thread_and_add_up_across_threads() {
        // Other tests make and drop storages meanwhile, by far fewer than
        // this million: a lost or doubled count would show.
        const BIG: isize = 1_000_000;
        let near = |got: isize, want: isize| (got - want).abs() < BIG / 10;
        let before = total();
        std::thread::spawn(|| add(BIG)).join().unwrap(); // folded at its exit
        assert!(
            near(total(), before + BIG),
            "{} vs {}",
            total(),
            before + BIG
        );
        add(-BIG); // taken back on another thread
        assert!(near(total(), before));
    }
}
