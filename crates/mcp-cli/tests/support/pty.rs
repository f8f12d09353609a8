//! Running `mcp` on a pseudo-terminal, as a person would: what it draws is
//! collected as it comes, and keys are typed in once a prompt is shown.

use std::io::{Read as _, Write as _};
use std::os::fd::{FromRawFd as _, OwnedFd};
use std::process::{Child, ExitStatus};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{MCP, RUN_WAIT};

/// `mcp` running with a pseudo-terminal as its stdin, stdout and stderr;
/// killed if the test ends before it does.
pub struct Terminal {
    child: Child,
    keys: std::fs::File,
    seen: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Terminal {
    /// Starts `mcp ARGS` on a new 100x24 pseudo-terminal.
    pub fn run(args: &[&str]) -> Terminal {
        Terminal::run_with(args, &[])
    }

    /// Starts `mcp ARGS` with `env` added to its environment on a new
    /// 100x24 pseudo-terminal.
    pub fn run_with(args: &[&str], env: &[(&str, &str)]) -> Terminal {
        Terminal::start(args, env, false)
    }

    /// [`Terminal::run_with`], the pseudo-terminal being `mcp`'s
    /// controlling terminal (its `/dev/tty`), as a person's shell gives.
    pub fn run_controlling(args: &[&str], env: &[(&str, &str)]) -> Terminal {
        Terminal::start(args, env, true)
    }

    fn start(args: &[&str], env: &[(&str, &str)], controlling: bool) -> Terminal {
        let (mut master, mut slave) = (-1, -1);
        let size = libc::winsize {
            ws_row: 24,
            ws_col: 100,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty fills in two new descriptors, owned from here on.
        let opened = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(opened, 0, "a pseudo-terminal");
        // SAFETY: both descriptors were just opened and are owned only here.
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let mut command = std::process::Command::new(MCP);
        command
            .args(args)
            .envs(env.iter().copied())
            .stdin(slave.try_clone().expect("a slave end for stdin"))
            .stdout(slave.try_clone().expect("a slave end for stdout"))
            .stderr(slave);
        if controlling {
            use std::os::unix::process::CommandExt as _;
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                command.pre_exec(|| {
                    // A session of its own, whose controlling terminal is
                    // the pseudo-terminal on its stdin.
                    if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let child = command.spawn().expect("mcp ran");
        let keys = std::fs::File::from(master.try_clone().expect("a master end for keys"));
        let seen = Arc::new(Mutex::new(String::new()));
        let collected = Arc::clone(&seen);
        let reader = std::thread::spawn(move || {
            let mut screen = std::fs::File::from(master);
            let mut buffer = [0; 4096];
            // Reading ends with EIO once the last slave end has closed.
            while let Ok(n @ 1..) = screen.read(&mut buffer) {
                let text = String::from_utf8_lossy(&buffer[..n]).into_owned();
                collected.lock().expect("not poisoned").push_str(&text);
            }
        });
        Terminal {
            child,
            keys,
            seen,
            reader: Some(reader),
        }
    }

    /// Everything drawn so far.
    pub fn seen(&self) -> String {
        self.seen.lock().expect("not poisoned").clone()
    }

    /// Waits until `text` has been drawn after byte `from` of the output;
    /// where it starts.
    pub fn wait_for(&self, text: &str, from: usize) -> usize {
        let deadline = Instant::now() + RUN_WAIT;
        loop {
            let seen = self.seen();
            if let Some(at) = seen.get(from..).and_then(|rest| rest.find(text)) {
                return from + at;
            }
            assert!(
                Instant::now() < deadline,
                "{text:?} was never shown; the terminal shows:\n{seen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The MCP endpoint `mcp host` prints as it starts, and where the
    /// output after it begins.
    pub fn endpoint(&self) -> (String, usize) {
        let at = self.wait_for("MCP endpoint: ", 0) + "MCP endpoint: ".len();
        let end = self.wait_for("/mcp", at) + "/mcp".len();
        (self.seen()[at..end].to_owned(), end)
    }

    /// Types `keys`.
    pub fn type_keys(&mut self, keys: &str) {
        self.keys.write_all(keys.as_bytes()).expect("keys typed");
        self.keys.flush().expect("keys sent");
    }

    /// Waits for `mcp` to exit; how it exited and all it drew.
    pub fn finish(mut self) -> (ExitStatus, String) {
        let deadline = Instant::now() + RUN_WAIT;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("mcp is waited for") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("mcp did not finish; the terminal shows:\n{}", self.seen());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        let seen = self.seen.lock().expect("not poisoned").clone();
        (status, seen)
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
