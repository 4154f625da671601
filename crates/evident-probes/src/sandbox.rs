//! The sandbox a test command runs in, where the platform has one (Linux): Landlock
//! lets it read only the snapshot, the declared environment and the system and
//! toolchain directories, and write only the snapshot and its private directories; a
//! new user and network namespace, with its own loopback up, keeps it off the network.
//!
//! Both are set up in the child between `fork` and `exec`; the ruleset is built in the
//! parent (opening paths allocates), so the child only makes system calls. Where a part
//! is not available (no Landlock, no user namespaces: macOS, an old kernel, a locked
//! down container) the run is reported as such and never as sandboxed.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, Scope,
};

/// The Landlock ABI the rules are written for: file access including truncation and
/// device ioctls (ABI 5); newer kernels enforce all of it, older ones what they know.
const TARGET_ABI: ABI = ABI::V5;

/// What the command may touch.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Read and execute beneath these (missing ones are left out).
    pub read: Vec<PathBuf>,
    /// Read, write, create and remove beneath these.
    pub write: Vec<PathBuf>,
    /// Reach the network (the check says `network = true`).
    pub network: bool,
}

/// How a run was confined, as the evidence reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    /// Files confined by Landlock: the reads and writes of [`Policy`] only.
    pub sandboxed: bool,
    /// The mechanisms, or why there is none ("not sandboxed: …").
    pub how: String,
    /// Off the network (a namespace with only loopback).
    pub network_isolated: bool,
}

/// A sandbox ready to enter in the child.
pub struct Prepared {
    ruleset: Option<RulesetCreated>,
    netns: Option<IdMaps>,
    report: Report,
}

impl Prepared {
    /// How the run will be confined.
    pub fn report(&self) -> &Report {
        &self.report
    }
}

/// The uid and gid maps written in the child, made before `fork`.
struct IdMaps {
    uid: Vec<u8>,
    gid: Vec<u8>,
}

/// The running kernel's Landlock ABI version (0: none).
pub fn landlock_abi() -> i32 {
    static ABI_VERSION: OnceLock<i32> = OnceLock::new();
    *ABI_VERSION.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
            #[allow(unsafe_code)]
            // SAFETY: with a null attribute and size 0 the call only returns a number.
            let v = unsafe {
                libc::syscall(
                    libc::SYS_landlock_create_ruleset,
                    std::ptr::null::<u8>(),
                    0usize,
                    1u32,
                )
            };
            i32::try_from(v).unwrap_or(0).max(0)
        }
        #[cfg(not(target_os = "linux"))]
        {
            0
        }
    })
}

/// Whether a child can enter a new user and network namespace here (checked once, by
/// starting `/bin/sh -c :` inside one).
pub fn netns_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let Some(maps) = IdMaps::current() else {
            return false;
        };
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.args(["-c", ":"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        #[allow(unsafe_code)]
        // SAFETY: the closure only makes system calls on memory made before fork.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(move || enter_netns(&maps));
        }
        cmd.status().is_ok_and(|s| s.success())
    })
}

impl IdMaps {
    fn current() -> Option<IdMaps> {
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        Some(IdMaps {
            uid: format!("{uid} {uid} 1\n").into_bytes(),
            gid: format!("{gid} {gid} 1\n").into_bytes(),
        })
    }
}

/// Build the sandbox for `policy` (in the parent).
pub fn prepare(policy: &Policy) -> Prepared {
    let mut how = Vec::new();
    let abi = landlock_abi();
    let ruleset = if abi > 0 {
        match ruleset(policy) {
            Ok(r) => {
                how.push(format!("landlock ABI {abi}"));
                Some(r)
            }
            Err(e) => {
                how.push(format!("landlock failed: {e}"));
                None
            }
        }
    } else {
        how.push("no landlock on this kernel".into());
        None
    };
    let netns = if policy.network {
        how.push("network allowed by the check".into());
        None
    } else if netns_available() {
        how.push("network namespace (loopback only)".into());
        IdMaps::current()
    } else {
        how.push("network NOT isolated (no user namespaces)".into());
        None
    };
    let sandboxed = ruleset.is_some();
    let mut text = how.join("; ");
    if !sandboxed {
        text = format!("not sandboxed: {text}");
    }
    Prepared {
        report: Report {
            sandboxed,
            how: text,
            network_isolated: netns.is_some(),
        },
        ruleset,
        netns,
    }
}

fn ruleset(policy: &Policy) -> Result<RulesetCreated, landlock::RulesetError> {
    let read = AccessFs::from_read(TARGET_ABI);
    let all = AccessFs::from_all(TARGET_ABI);
    let mut r = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)?
        // Signals and abstract unix sockets stay within the sandbox (ABI 6).
        .scope(Scope::from_all(ABI::V6))?
        .create()?;
    for (paths, access) in [(&policy.read, read), (&policy.write, all)] {
        for p in paths {
            // A path that does not exist here grants nothing.
            let Ok(fd) = PathFd::new(p) else {
                continue;
            };
            // A file (not a directory) takes only the rights a file can have.
            let access = if Path::new(p).is_dir() {
                access
            } else {
                access & AccessFs::from_file(TARGET_ABI)
            };
            r = r.add_rule(PathBeneath::new(fd, access))?;
        }
    }
    Ok(r)
}

/// Enter the sandbox in `cmd`'s child, just before it runs the program.
pub fn apply(cmd: &mut tokio::process::Command, prepared: Prepared) {
    let Prepared { ruleset, netns, .. } = prepared;
    let mut ruleset = ruleset;
    #[allow(unsafe_code)]
    // SAFETY: between fork and exec the closure makes system calls only, on memory
    // made before fork (the maps, the ruleset's descriptor); `restrict_self` allocates
    // on its error path alone, after which the child exits without running anything.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(maps) = &netns {
                enter_netns(maps)?;
            }
            if let Some(r) = ruleset.take() {
                r.restrict_self().map_err(std::io::Error::other)?;
            }
            Ok(())
        });
    }
}

/// In the child: a new user namespace mapping only our own ids, a new network
/// namespace, and its loopback brought up (tests listen on 127.0.0.1).
fn enter_netns(maps: &IdMaps) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    // SAFETY: plain system calls on buffers that outlive them.
    unsafe {
        let err = std::io::Error::last_os_error;
        if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) != 0 {
            return Err(err());
        }
        let write = |path: &[u8], data: &[u8]| -> std::io::Result<()> {
            let fd = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(err());
            }
            let n = libc::write(fd, data.as_ptr().cast(), data.len());
            libc::close(fd);
            if n != data.len() as isize {
                return Err(err());
            }
            Ok(())
        };
        write(b"/proc/self/setgroups\0", b"deny")?;
        write(b"/proc/self/uid_map\0", &maps.uid)?;
        write(b"/proc/self/gid_map\0", &maps.gid)?;
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(err());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo".iter().enumerate() {
            req.ifr_name[i] = *b as libc::c_char;
        }
        req.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        let r = libc::ioctl(s, libc::SIOCSIFFLAGS, &req);
        libc::close(s);
        if r != 0 {
            return Err(err());
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = maps;
        Err(std::io::Error::other("no network namespaces here"))
    }
}
