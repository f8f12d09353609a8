//! What a benchmark run cost, read from Linux's `/proc`: a server's CPU
//! time and memory, its child processes' CPU time (a host's upstreams
//! work for every call it forwards), and how busy the whole machine was,
//! since on a shared machine a run that left cores idle, or had them
//! taken by other guests, measured something else than throughput.

use serde::Serialize;

/// CPU ticks of one process and of its descendants.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ProcessTicks {
    /// The process itself.
    pub(crate) own: u64,
    /// Its children, their children, and so on, as they are now.
    pub(crate) descendants: u64,
}

/// CPU time of `pid` and of its descendants now; `None` when the process
/// cannot be read.
pub(crate) fn process_ticks(pid: u32) -> Option<ProcessTicks> {
    let table = process_table();
    let own = table.iter().find(|p| p.pid == pid)?.ticks;
    let mut descendants = 0;
    let mut parents = vec![pid];
    while let Some(parent) = parents.pop() {
        for child in table.iter().filter(|p| p.ppid == parent && p.pid != pid) {
            descendants += child.ticks;
            parents.push(child.pid);
        }
    }
    Some(ProcessTicks { own, descendants })
}

/// One process as `/proc/PID/stat` shows it.
struct ProcessStat {
    pid: u32,
    ppid: u32,
    /// User plus system CPU ticks.
    ticks: u64,
}

/// Every process this one can read.
fn process_table() -> Vec<ProcessStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            parse_stat(pid, &stat)
        })
        .collect()
}

/// Reads a process's parent and CPU ticks from its `stat` line.
fn parse_stat(pid: u32, stat: &str) -> Option<ProcessStat> {
    // Fields after the parenthesised command name (which may hold spaces
    // and parentheses): the state, then the parent's pid; utime and stime
    // are the 14th and 15th fields overall.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ppid = fields.get(1)?.parse().ok()?;
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(ProcessStat {
        pid,
        ppid,
        ticks: utime + stime,
    })
}

/// The whole machine's CPU time, summed over its cores (the `cpu` line of
/// `/proc/stat`), in ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct MachineTicks {
    /// The cores counted (the `cpuN` lines).
    cores: usize,
    /// Running anything, in the kernel or not.
    busy: u64,
    /// Idle, or waiting for I/O.
    idle: u64,
    /// Taken by the hypervisor for other guests.
    steal: u64,
}

/// The machine's CPU time so far.
pub(crate) fn machine_ticks() -> Option<MachineTicks> {
    parse_machine(&std::fs::read_to_string("/proc/stat").ok()?)
}

fn parse_machine(stat: &str) -> Option<MachineTicks> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal (guest time is
    // counted in user already).
    let at = |i: usize| fields.get(i).copied().unwrap_or(0);
    let cores = stat
        .lines()
        .filter(|l| {
            l.strip_prefix("cpu")
                .is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count();
    Some(MachineTicks {
        cores,
        busy: at(0) + at(1) + at(2) + at(5) + at(6),
        idle: at(3) + at(4),
        steal: at(7),
    })
}

/// How the machine's cores spent a run, in percent of all their time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct MachineUse {
    /// Its cores.
    pub(crate) cores: usize,
    /// Busy with anything (this load generator too).
    pub(crate) busy_percent: f64,
    /// Idle: work that could have run and did not.
    pub(crate) idle_percent: f64,
    /// Taken by the hypervisor.
    pub(crate) steal_percent: f64,
}

impl MachineUse {
    /// Between two readings; `None` when no time passed.
    pub(crate) fn between(before: MachineTicks, after: MachineTicks) -> Option<MachineUse> {
        let busy = after.busy.saturating_sub(before.busy) as f64;
        let idle = after.idle.saturating_sub(before.idle) as f64;
        let steal = after.steal.saturating_sub(before.steal) as f64;
        let total = busy + idle + steal;
        (total > 0.0).then(|| MachineUse {
            cores: after.cores,
            busy_percent: busy / total * 100.0,
            idle_percent: idle / total * 100.0,
            steal_percent: steal / total * 100.0,
        })
    }
}

/// Clock ticks per second (`getconf CLK_TCK`; 100 on Linux).
pub(crate) fn clock_ticks() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

/// The resident set size of a process, KiB (Linux).
pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_cpu_and_memory() {
        let pid = std::process::id();
        assert!(rss_kib(pid).is_some_and(|kib| kib > 0));
        assert!(process_ticks(pid).is_some());
        assert!(machine_ticks().is_some());
    }

    #[test]
    fn a_stat_line_is_read_past_an_odd_command_name() {
        let line = "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 1 0 0 0 250 30 7 9 20 0 1 0 1 1 1";
        let stat = parse_stat(4242, line).unwrap();
        assert_eq!((stat.pid, stat.ppid, stat.ticks), (4242, 17, 280));
    }

    #[test]
    fn a_childs_cpu_counts_for_its_parent() {
        // A child that burns CPU, then sleeps so that it is still there.
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done; sleep 30",
            ])
            .spawn()
            .unwrap();
        let me = std::process::id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let (mut mine, mut its) = (ProcessTicks::default(), ProcessTicks::default());
        while std::time::Instant::now() < deadline {
            // The child's own first, so that what it has used by then is
            // in its parent's reading that follows.
            its = process_ticks(child.id()).unwrap_or_default();
            mine = process_ticks(me).unwrap();
            if its.own > 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(its.own > 0, "{its:?}");
        assert!(
            mine.descendants >= its.own,
            "{mine:?} against the child's {its:?}"
        );
    }

    #[test]
    fn the_machine_is_read_in_shares_of_its_time() {
        let before = parse_machine("cpu  100 0 50 800 10 0 5 20 0 0\ncpu0 1 2 3\n").unwrap();
        let after =
            parse_machine("cpu  160 0 70 850 10 0 15 40 0 0\ncpu0 1\ncpu1 2\nintr 5\n").unwrap();
        let used = MachineUse::between(before, after).unwrap();
        assert_eq!(used.cores, 2);
        // 90 busy, 50 idle, 20 stolen of 160.
        assert_eq!(used.busy_percent, 90.0 / 160.0 * 100.0);
        assert_eq!(used.idle_percent, 50.0 / 160.0 * 100.0);
        assert_eq!(used.steal_percent, 20.0 / 160.0 * 100.0);
        assert_eq!(MachineUse::between(after, after), None);
        assert_eq!(parse_machine("intr 1 2\n"), None);
    }
}
