//! Nothing a command starts outlives it, not even a process that left the command's
//! process group with `setsid`: the gate becomes the *subreaper* of its descendants
//! (an orphan is re-parented to it instead of to init), and after the commands it
//! kills every such adopted orphan. Otherwise the agent's test could start a daemon
//! that rewrites the state after the gate's last readback (found by the red team).
//!
//! Linux only (`PR_SET_CHILD_SUBREAPER`); elsewhere both calls do nothing.

use rustix::process::{Pid, Signal, WaitOptions};
use std::collections::HashSet;
use std::sync::Mutex;

/// The commands this process runs right now (each leads its own process group).
static COMMANDS: Mutex<Option<HashSet<i32>>> = Mutex::new(None);
/// Held while a command is spawned and noted, and while orphans are looked for, so a
/// command just spawned is never mistaken for an orphan.
static SCAN: Mutex<()> = Mutex::new(());

/// Gates in one process (a server runs several at once) share the subreaper: an
/// orphan that one gate's command started legitimately (a test's daemon that lives
/// while the test runs) is indistinguishable from a leftover, so no gate may kill
/// orphans while another gate's commands are running. A command wave holds this
/// shared ([`command_wave`]); killing orphans holds it exclusively
/// ([`kill_escaped_exclusive`]), after every running wave has finished.
static WAVES: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// Held for the whole of a gate's command wave.
pub async fn command_wave() -> tokio::sync::RwLockReadGuard<'static, ()> {
    WAVES.read().await
}

/// [`kill_escaped`], once no other gate of this process is running commands (so a
/// running command's own daemons are not taken for orphans). With no orphan at all
/// (the usual case) it does not wait.
pub async fn kill_escaped_exclusive() -> usize {
    reap_dead_orphans();
    if !orphans_present() {
        return 0;
    }
    let _all = WAVES.write().await;
    kill_escaped()
}

/// Reaps adopted orphans that have already exited: nobody else waits for them, and a
/// dead one needs no exclusive hold (Chromium's crash handler, which leaves the
/// browser's session and exits with it, would otherwise stay a zombie of this process).
fn reap_dead_orphans() {
    let me = rustix::process::getpid();
    let my_session = stat(me.as_raw_nonzero().get()).map(|p| p.session);
    let _scan = spawning();
    for p in children(me) {
        if p.state == 'Z' && is_orphan(&p, my_session, is_command(p.pid.as_raw_nonzero().get())) {
            let _ = rustix::process::waitpid(Some(p.pid), WaitOptions::NOHANG);
        }
    }
}

/// Is there a live adopted orphan right now?
fn orphans_present() -> bool {
    let me = rustix::process::getpid();
    let my_session = stat(me.as_raw_nonzero().get()).map(|p| p.session);
    let _scan = spawning();
    children(me).iter().any(|p| {
        p.state != 'Z' && is_orphan(p, my_session, is_command(p.pid.as_raw_nonzero().get()))
    })
}

/// Hold this while spawning a command and calling [`started`].
pub(crate) fn spawning() -> std::sync::MutexGuard<'static, ()> {
    SCAN.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Notes a command the probe started, so [`kill_escaped`] leaves it alone.
pub(crate) fn started(pid: i32) {
    if let Ok(mut c) = COMMANDS.lock() {
        c.get_or_insert_with(HashSet::new).insert(pid);
    }
}

/// Notes that a command ended.
pub(crate) fn ended(pid: i32) {
    if let Ok(mut c) = COMMANDS.lock()
        && let Some(set) = c.as_mut()
    {
        set.remove(&pid);
    }
}

fn is_command(pid: i32) -> bool {
    COMMANDS
        .lock()
        .map(|c| c.as_ref().is_some_and(|s| s.contains(&pid)))
        .unwrap_or(false)
}

/// Makes this process the subreaper of everything it starts. Idempotent.
pub fn adopt_orphans() {
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
}

/// Kills (and reaps) every adopted orphan: a child of this process in another session
/// (it called `setsid`), or leading a process group that is not a command the probe
/// runs (it called `setpgid`). A leftover that stayed in its command's group was killed
/// with that group. Other children of this process (its own short-lived helpers, which
/// share its session and group) are left alone; so a descendant that moved itself into
/// the gate's own process group is not caught — run the gate in a PID namespace or a
/// cgroup of its own to close that.
/// Repeats until none is left (a killed orphan's own children are adopted in turn),
/// for at most about a second. Returns how many were killed.
pub fn kill_escaped() -> usize {
    let me = rustix::process::getpid();
    // Read from /proc like the children's, not with getsid(2): in a PID namespace whose
    // session leader lives outside it (a CI container), getsid returns 0, which both
    // sides of the comparison below then show alike.
    let my_session = stat(me.as_raw_nonzero().get()).map(|p| p.session);
    let mut killed = 0;
    for _ in 0..100 {
        let mut found = false;
        {
            let _scan = spawning();
            for p in children(me) {
                let raw = p.pid.as_raw_nonzero().get();
                if !is_orphan(&p, my_session, is_command(raw)) {
                    // A command (or a helper) of this process: its owner waits for it.
                    continue;
                }
                // An adopted orphan: nobody else waits for it, so reap it here.
                if p.state != 'Z' {
                    found = true;
                    if rustix::process::kill_process(p.pid, Signal::KILL).is_ok() {
                        killed += 1;
                    }
                }
                let _ = rustix::process::waitpid(Some(p.pid), WaitOptions::NOHANG);
            }
        }
        if !found {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    killed
}

/// Reaps the children of this process left in process group `pgid` once its leader
/// was killed with the whole group (a browser's renderers, re-parented here when this
/// process is their subreaper). For at most about half a second.
pub(crate) fn reap_group(pgid: i32) {
    let me = rustix::process::getpid();
    for _ in 0..50 {
        let left: Vec<Proc> = children(me)
            .into_iter()
            .filter(|p| p.pgrp == pgid)
            .collect();
        if left.is_empty() {
            return;
        }
        for p in &left {
            if p.state != 'Z' {
                let _ = rustix::process::kill_process(p.pid, Signal::KILL);
            }
            let _ = rustix::process::waitpid(Some(p.pid), WaitOptions::NOHANG);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// An adopted orphan is a child in another session than ours, or leading a process
/// group that is not one of our commands'.
fn is_orphan(p: &Proc, my_session: Option<i32>, is_command: bool) -> bool {
    let raw = p.pid.as_raw_nonzero().get();
    let leader = p.pgrp == raw;
    my_session != Some(p.session) || (leader && !is_command)
}

struct Proc {
    pid: Pid,
    state: char,
    ppid: i32,
    pgrp: i32,
    session: i32,
}

/// The children of `parent`, read from `/proc/<pid>/stat`.
fn children(parent: Pid) -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parent = parent.as_raw_nonzero().get();
    dir.filter_map(|e| {
        let name = e.ok()?.file_name();
        let pid: i32 = name.to_str()?.parse().ok()?;
        stat(pid).filter(|p| p.ppid == parent)
    })
    .collect()
}

/// One process's `/proc/<pid>/stat`: `pid (comm) state ppid pgrp session …`, where
/// comm may hold spaces and parentheses. Ids of processes outside this PID namespace
/// read as 0.
fn stat(pid: i32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let mut f = rest.split(' ');
    let state = f.next()?.chars().next()?;
    let ppid: i32 = f.next()?.parse().ok()?;
    let pgrp: i32 = f.next()?.parse().ok()?;
    let session: i32 = f.next()?.parse().ok()?;
    Some(Proc {
        pid: Pid::from_raw(pid)?,
        state,
        ppid,
        pgrp,
        session,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child(pid: i32, pgrp: i32, session: i32) -> Proc {
        Proc {
            pid: Pid::from_raw(pid).unwrap(),
            state: 'S',
            ppid: 1,
            pgrp,
            session,
        }
    }

    /// Under a PID namespace whose session leader is outside it, our session and our
    /// helpers' read as 0 (getsid(2) returned 0 there, and rustix panicked on it in CI).
    #[test]
    fn a_session_outside_the_namespace_reads_as_zero_and_compares() {
        let me = stat(rustix::process::getpid().as_raw_nonzero().get()).unwrap();
        assert!(me.session >= 0);
        // A helper in our (outside) session, in our group: left alone.
        assert!(!is_orphan(&child(40, 0, 0), Some(0), false));
        // A command leading its own group: left alone.
        assert!(!is_orphan(&child(41, 41, 0), Some(0), true));
        // setsid: a session of its own.
        assert!(is_orphan(&child(42, 42, 42), Some(0), false));
        // setpgid into a group of its own that is no command.
        assert!(is_orphan(&child(43, 43, 0), Some(0), false));
        // Our own session unreadable: everything adopted counts as an orphan.
        assert!(is_orphan(&child(44, 0, 0), None, false));
    }
}
