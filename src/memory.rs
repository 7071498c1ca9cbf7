//! Memory a burst used goes back to the operating system once the node is quiet again.
//!
//! mimalloc returns the free pages of its arena only when it is asked to collect, which
//! happens as a side effect of allocating. After a sustained sale, with little allocated any
//! more, the node stayed at ~170 MB resident, 141 MB of it in mimalloc's arena, for ~30 MB in
//! use (bench/README.md). Each worker thread collects when it runs out of work, at most every
//! `EVERY`: a thread that goes idle again and again in a busy second collects once.
//!
//! What a collection frees only leaves the resident size when mimalloc commits its arena's
//! memory as it is used: by default on Linux it commits a whole arena at once, and the pages a
//! burst touched stayed resident (82 MB a minute after a sustained sale, against 46 MB with
//! commit on demand; 51 against 32 MB at the start).

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The least time between two collections of one thread.
const EVERY: Duration = Duration::from_secs(5);

thread_local! {
    static COLLECTED: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// mimalloc's `arena_eager_commit` (its index in `mi_option_e`, the same in mimalloc 2 and 3).
#[cfg(feature = "mimalloc")]
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;

/// Run by the loader before `main`: the standard library allocates before `main` starts, and
/// the first allocation reserves mimalloc's first arena, whose commit mode is fixed then.
#[cfg(all(feature = "mimalloc", target_os = "linux"))]
#[used]
#[unsafe(link_section = ".init_array")]
static CONFIGURE: extern "C" fn() = configure;

/// Arenas commit their memory as it is used. `MIMALLOC_ARENA_EAGER_COMMIT` in the environment
/// still wins.
#[cfg(feature = "mimalloc")]
extern "C" fn configure() {
    // SAFETY: sets one of mimalloc's options to a value it documents; no pointer is passed.
    unsafe { libmimalloc_sys::mi_option_set_default(ARENA_EAGER_COMMIT, 0) }
}

/// Called by the runtime each time a worker thread parks (has nothing to run).
pub fn when_idle() {
    COLLECTED.with(|collected| {
        if collected.get().is_some_and(|at| at.elapsed() < EVERY) {
            return;
        }
        collected.set(Some(Instant::now()));
        collect();
    });
}

#[cfg(feature = "mimalloc")]
fn collect() {
    // SAFETY: mi_collect takes no pointer and only frees memory mimalloc itself holds unused.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// The system allocator returns what it can on its own (heap profilers need it unchanged).
#[cfg(not(feature = "mimalloc"))]
fn collect() {}

#[cfg(all(test, feature = "mimalloc", target_os = "linux"))]
mod tests {
    #[test]
    fn the_allocator_commits_its_arenas_as_they_are_used() {
        if std::env::var_os("MIMALLOC_ARENA_EAGER_COMMIT").is_some() {
            return; // the operator's choice wins
        }
        // SAFETY: reads an option by its documented index.
        let eager = unsafe { libmimalloc_sys::mi_option_get(super::ARENA_EAGER_COMMIT) };
        assert_eq!(eager, 0, "set before main by the loader constructor");
    }
}
