//! Tests that need something the machine may lack: a program such as
//! `redis-server`, or a capability. Where it is missing, such a test fails
//! under CI (`CI` set, other than `false` or `0`), naming what is missing
//! and how `.ci/run` provides it; anywhere else it is skipped: it says so
//! in its own output and returns, and the test binary ends with one line
//! per missing need, counting the tests skipped and saying how to get it.

use mcp_core::sync::MutexExt as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once, OnceLock};

/// Something some tests need, which the machine may lack.
pub struct Need {
    /// What the tests need ("Redis").
    what: &'static str,
    /// Why the machine lacks it ("redis-server is not on the PATH").
    missing: &'static str,
    /// How to get it ("install it with: apt-get install redis-server").
    remedy: &'static str,
    /// How `.ci/run` provides it.
    ci: &'static str,
    /// Whether the machine has it.
    present: fn() -> bool,
    here: OnceLock<bool>,
    skipped: AtomicUsize,
}

/// A real Redis: `redis-server` on the `PATH`.
pub static REDIS: Need = Need::new(
    "Redis",
    "redis-server is not on the PATH",
    "install it with: apt-get install redis-server (Debian/Ubuntu)",
    ".ci/run installs it (apt-get install redis-server)",
    || on_path("redis-server"),
);

/// The needs with a skipped test, reported when the test binary exits.
static SKIPPED: Mutex<Vec<&'static Need>> = Mutex::new(Vec::new());

impl Need {
    /// A need named `what`, which `present` tells whether the machine
    /// has; `missing`, `remedy` and `ci` are what a test says when it
    /// lacks it.
    pub const fn new(
        what: &'static str,
        missing: &'static str,
        remedy: &'static str,
        ci: &'static str,
        present: fn() -> bool,
    ) -> Need {
        Need {
            what,
            missing,
            remedy,
            ci,
            present,
            here: OnceLock::new(),
            skipped: AtomicUsize::new(0),
        }
    }

    /// Whether the running test can go on: true where the machine has
    /// it. Where it lacks it: under CI a panic; elsewhere false, with the
    /// test noted as skipped (it should return at once).
    #[track_caller]
    pub fn met(&'static self) -> bool {
        if *self.here.get_or_init(self.present) {
            return true;
        }
        assert!(
            !under_ci(),
            "this test needs {}, but {}; under CI (the CI variable is set) every test must run: {}",
            self.what,
            self.missing,
            self.ci
        );
        eprintln!(
            "skipped: this test needs {}, but {}",
            self.what, self.missing
        );
        if self.skipped.fetch_add(1, Ordering::Relaxed) == 0 {
            SKIPPED.locked().push(self);
            static AT_EXIT: Once = Once::new();
            // SAFETY: `report` is a plain function that only reads statics.
            AT_EXIT.call_once(|| unsafe {
                libc::atexit(report);
            });
        }
        false
    }
}

/// Says, for each need, how many tests were skipped for its lack and how
/// to get it. Written to stderr directly, past the test harness's capture.
extern "C" fn report() {
    let needs = SKIPPED.locked();
    let mut stderr = std::io::stderr().lock();
    for need in needs.iter() {
        let n = need.skipped.load(Ordering::Relaxed);
        let tests = if n == 1 {
            "test that needs"
        } else {
            "tests that need"
        };
        let _ = writeln!(
            stderr,
            "skipped {n} {tests} {}: {}; {}",
            need.what, need.missing, need.remedy
        );
    }
}

/// Whether these tests run under CI: `CI` is set, and not to `false` or
/// `0` (or nothing).
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|ci| !matches!(ci.as_str(), "" | "false" | "0"))
}

/// Whether `program` is a file in a folder of the `PATH`.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}
