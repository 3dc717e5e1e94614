//! Handing freed memory back to the kernel: the daemon shell's one call
//! into the C allocator, made after the moments whose transient peak would
//! otherwise stay resident (the startup's parse, plan and first
//! programming; a reload or an edit).
//!
//! glibc's `free()` returns memory to the kernel only from the top of a
//! heap; what a startup frees below the records it keeps stays in the
//! process (a third of its anonymous memory at tens of thousands of real
//! servers). `malloc_trim(0)` gives back every whole free page of every
//! arena. keepalived needs no such call: its C records are allocated once,
//! as they are kept.
//!
//! After a reload the memory it freed (the previous model, the load's own
//! transients) is kept while it is no more than what is in use: the next
//! reload takes about as much again, and found in place it costs no page
//! fault per page. (Measured together with allocator thresholds since
//! dropped, the two saved a fifth of a reload's loading at 40,000 real
//! servers in the emulated guest; this rule's own share was not measured
//! apart.) The anonymous memory after a reload is then up to
//! twice that after the startup; a reload to a much smaller file gives the
//! rest back.

use std::time::Instant;

/// One allocator arena for the whole process, unless the operator chose
/// (`MALLOC_ARENA_MAX`). glibc gives each thread that allocates under
/// contention an arena of its own, and the checker's workers then each
/// keep the holes a startup leaves: 60 (TCP_CHECK) to 340 (HTTP_GET)
/// bytes a real server in one run at 20,000 (runs vary by ~150), for no
/// CPU the bench could tell apart. Called first thing, before any thread.
pub fn one_arena() {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return;
    }
    set_arena_max();
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_arena_max() {
    // SAFETY: mallopt only sets an allocator parameter; called before any
    // other thread exists, it races with no allocation.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_arena_max() {}

/// The allocator's free and used bytes (main arena and all), if known.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn heap_use() -> Option<(usize, usize)> {
    // SAFETY: mallinfo2 only reads the allocator's own counters (taking
    // each arena's lock) and returns them by value.
    let m = unsafe { libc::mallinfo2() };
    Some((m.fordblks, m.uordblks))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn heap_use() -> Option<(usize, usize)> {
    None
}

/// Returns the allocator's free pages to the kernel; logs what it took.
pub fn release_free_memory() {
    let t = Instant::now();
    let released = trim();
    log::debug!(
        "memory: free pages {} to the kernel in {:.3} ms",
        if released {
            "returned"
        } else {
            "none returned"
        },
        t.elapsed().as_secs_f64() * 1e3
    );
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() -> bool {
    // SAFETY: malloc_trim only walks and releases the allocator's own free
    // lists (taking each arena's lock); it touches no memory of ours and
    // is safe to call from any thread at any time.
    unsafe { libc::malloc_trim(0) != 0 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() -> bool {
    false
}

/// Whether memory is to be released at the next quiet moment (the event
/// loop's next heartbeat), once something large was freed.
#[derive(Debug, Default)]
pub struct TrimDue(Option<After>);

/// What left the free memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    /// A startup's parse, plan and first programming: all of it goes back.
    Start,
    /// A reload (or an edit): what it freed is about what the next one
    /// takes again, so it is kept while it is no more than what is in use
    /// (a reload to a much smaller file still gives the rest back).
    Reload,
}

impl TrimDue {
    /// The startup is done: its transient peak is given back.
    pub fn set(&mut self) {
        self.0 = Some(After::Start);
    }

    /// A reload is done.
    pub fn set_after_reload(&mut self) {
        if self.0.is_none() {
            self.0 = Some(After::Reload);
        }
    }

    /// At a quiet moment: releases memory if due.
    pub fn run(&mut self) {
        match self.0.take() {
            None => {}
            Some(After::Start) => release_free_memory(),
            Some(After::Reload) => match heap_use() {
                Some((free, used)) if free <= used => log::debug!(
                    "memory: {} kB free kept for the next reload ({} kB in use)",
                    free / 1024,
                    used / 1024
                ),
                _ => release_free_memory(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A large block freed below a live one stays resident until the trim
    /// (the situation after a startup), and a due trim is run once.
    #[test]
    fn trim_runs_once_when_due() {
        let mut due = TrimDue::default();
        due.run();
        assert_eq!(due.0, None);
        due.set();
        due.set_after_reload();
        assert_eq!(due.0, Some(After::Start), "a startup's trim stays due");
        due.run();
        assert_eq!(due.0, None);
        due.set_after_reload();
        assert_eq!(due.0, Some(After::Reload));
        due.run();
        assert_eq!(due.0, None);
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn freed_pages_below_live_records_go_back() {
        fn anon_kb() -> u64 {
            std::fs::read_to_string("/proc/self/status")
                .unwrap()
                .lines()
                .find_map(|l| l.strip_prefix("RssAnon:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap()
        }
        // Many small blocks (below the mmap threshold, so on a heap), each
        // touched, then every other one freed in runs large enough to hold
        // whole pages, with a live block after each run.
        let mut keep = Vec::new();
        let mut gone = Vec::new();
        for i in 0..4096 {
            let b = vec![1u8; 16 * 1024];
            if i % 2 == 0 {
                gone.push(b);
            } else {
                keep.push(b);
            }
        }
        let before = anon_kb();
        drop(gone);
        let freed = anon_kb();
        trim();
        let after = anon_kb();
        // 32 MB freed in 16 KB holes between live blocks: free() keeps them,
        // the trim gives back most of them (other tests run beside this one,
        // so only a part is asserted).
        assert!(
            after + 16 * 1024 <= freed,
            "RssAnon {before} kB, {freed} kB after free, {after} kB after the trim"
        );
        assert_eq!(keep.len(), 2048);
    }
}
