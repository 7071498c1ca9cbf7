//! Memory a burst used goes back to the operating system once the node is quiet again.
//!
//! The node runs on jemalloc. A sale makes a few long-lived blocks at scattered moments (a
//! pooled connection's buffers, an actor's mailbox) among a great many short-lived ones, and a
//! page of the allocator that holds one live block cannot be given back. jemalloc keeps the
//! blocks of a size class in slabs of a few 4 KiB pages and gives back free pages at that grain;
//! mimalloc, which the node ran on before, kept them in pages of 64 KiB and more. It also spent
//! more CPU a registration (bench/README.md, twenty-fourth sitting).
//!
//! jemalloc gives back pages it has not reused for a while (`dirty_decay_ms`, 10 s) from
//! background threads of its own, so a node that has gone quiet shrinks without an allocation
//! to trigger it; what it gives back leaves the resident size at once (`muzzy_decay_ms:0`: no
//! lazily freed pages the kernel would still count). Each worker thread, when it runs out of
//! work, at most every `EVERY`, hands the blocks it caches back to their slabs, so the slabs a
//! burst filled can empty.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The least time between two flushes of one thread's cache.
const EVERY: Duration = Duration::from_secs(5);

thread_local! {
    static FLUSHED: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// jemalloc's options, read when it starts; `_RJEM_MALLOC_CONF` in the environment still wins.
#[cfg(feature = "jemalloc")]
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static MALLOC_CONF: &[u8] = b"background_thread:true,muzzy_decay_ms:0\0";

/// Called by the runtime each time a worker thread parks (has nothing to run).
pub fn when_idle() {
    FLUSHED.with(|flushed| {
        if flushed.get().is_some_and(|at| at.elapsed() < EVERY) {
            return;
        }
        flushed.set(Some(Instant::now()));
        flush();
    });
}

#[cfg(feature = "jemalloc")]
fn flush() {
    // SAFETY: a control that reads and writes nothing through the pointers it is given.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            c"thread.tcache.flush".as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        );
    }
}

/// The system allocator returns what it can on its own (heap profilers need it unchanged).
#[cfg(not(feature = "jemalloc"))]
fn flush() {}

#[cfg(all(test, feature = "jemalloc"))]
mod tests {
    /// Reads one of jemalloc's options by name.
    fn option<T: Copy + Default>(name: &std::ffi::CStr) -> T {
        let mut value = T::default();
        let mut size = std::mem::size_of::<T>();
        // SAFETY: `value` and `size` describe a writable place of the option's type.
        let status = unsafe {
            tikv_jemalloc_sys::mallctl(
                name.as_ptr(),
                (&mut value as *mut T).cast(),
                &mut size,
                std::ptr::null_mut(),
                0,
            )
        };
        assert_eq!(status, 0, "jemalloc knows {name:?}");
        value
    }

    #[test]
    fn the_allocator_gives_back_what_it_no_longer_uses_on_its_own() {
        if std::env::var_os("_RJEM_MALLOC_CONF").is_some() {
            return; // the operator's choice wins
        }
        assert!(option::<bool>(c"opt.background_thread"));
        assert_eq!(option::<isize>(c"opt.muzzy_decay_ms"), 0);
    }
}
