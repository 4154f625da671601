//! Every command in README.md, docs/*.md and examples/*/README.md runs as written.
//!
//! The convention (README, "Contributing"):
//! - A fenced block whose info string starts with `sh`, `bash`, `shell` or `console` is
//!   run. In a `console` block the `$ ` lines are the commands (a trailing `\` continues
//!   one) and every other line is output.
//! - `no-run` in the info string (```` ```sh no-run ````) marks a block that is not run:
//!   a synopsis with placeholders, or a deployment sketch naming hosts and paths that
//!   exist elsewhere. `services` runs it only in a build with `--cfg evident_services`
//!   (PostgreSQL, MariaDB, Redis, Chromium).
//! - A command must exit 0, or N when its last line ends with the comment `# exit N`
//!   (or `# exit N: why`).
//! - A bare fence holding a `$ ` line is an error: say `console` or `console no-run`.
//!
//! Each document runs in a fresh temporary directory holding a copy of `examples/`, so a
//! doc can name `examples/...`; its blocks run in order there, each in one `bash` with a
//! time limit, so a file one block writes is there for the next. `evident` on `PATH` is
//! the binary under test, and `cargo run -q -- ARGS` runs it (any other `cargo` command
//! must be in a `no-run` block: the suite does not build itself again).

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{bin, workspace};

/// One block's time limit: the billing example compiles a small crate.
const BLOCK_LIMIT: Duration = Duration::from_secs(240);

/// One runnable command: where it starts in the document, its text, the exit it expects.
#[derive(Debug, PartialEq)]
struct Cmd {
    line: usize,
    text: String,
    exit: i32,
}

/// One fenced block: the line of its opening fence, its info string and its lines.
#[derive(Debug)]
struct Block {
    line: usize,
    info: String,
    body: Vec<String>,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut current: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match current.as_mut() {
            None if trimmed.starts_with("```") => {
                current = Some(Block {
                    line: i + 1,
                    info: trimmed.trim_start_matches('`').trim().to_string(),
                    body: Vec::new(),
                })
            }
            Some(_) if trimmed.trim_end() == "```" => out.extend(current.take()),
            Some(b) => b.body.push(line.to_string()),
            None => {}
        }
    }
    out
}

/// The `N` of a trailing `# exit N` or `# exit N: why` comment.
fn expected_exit(last_line: &str) -> Option<i32> {
    let at = last_line.rfind("# exit ")?;
    let rest = &last_line[at + "# exit ".len()..];
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let after = rest[digits.len()..].trim_end();
    if digits.is_empty() || !(after.is_empty() || after.starts_with(':')) {
        return None;
    }
    digits.parse().ok()
}

/// The heredoc delimiter a line opens (`<<'EOF'`, `<<"EOF"`, `<<EOF`, `<<-EOF`).
fn heredoc(line: &str) -> Option<String> {
    let at = line.find("<<")?;
    let rest = line[at + 2..].trim_start_matches('-').trim_start();
    let word: String = rest
        .trim_start_matches(['\'', '"'])
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// The commands of a runnable block, each with its first line in the document.
fn commands(block: &Block) -> Vec<Cmd> {
    let console = block.info.starts_with("console");
    let mut out = Vec::new();
    let mut i = 0;
    while i < block.body.len() {
        let first = block.body[i].as_str();
        let start = if console {
            match first.strip_prefix("$ ") {
                Some(rest) => rest,
                None => {
                    i += 1;
                    continue;
                }
            }
        } else {
            let t = first.trim();
            if t.is_empty() || t.starts_with('#') {
                i += 1;
                continue;
            }
            first
        };
        let line = block.line + 1 + i;
        let mut lines = vec![start.to_string()];
        while lines.last().is_some_and(|l| l.trim_end().ends_with('\\')) && i + 1 < block.body.len()
        {
            i += 1;
            lines.push(block.body[i].clone());
        }
        let exit = expected_exit(lines.last().unwrap()).unwrap_or(0);
        if let Some(word) = lines.iter().find_map(|l| heredoc(l)) {
            while i + 1 < block.body.len() {
                i += 1;
                lines.push(block.body[i].clone());
                if block.body[i].trim() == word {
                    break;
                }
            }
        }
        out.push(Cmd {
            line,
            text: lines.join("\n"),
            exit,
        });
        i += 1;
    }
    out
}

fn runnable(info: &str) -> bool {
    let mut words = info.split_whitespace();
    let lang = words.next().unwrap_or("");
    ["sh", "bash", "shell", "console"].contains(&lang)
        && !info.split_whitespace().any(|w| w == "no-run")
}

fn needs_services(info: &str) -> bool {
    info.split_whitespace().any(|w| w == "services")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        let ty = entry.file_type().unwrap();
        if name == "target" || name == ".evident" {
            continue;
        }
        if ty.is_dir() {
            copy_dir(&entry.path(), &to.join(&name));
        } else if ty.is_file() {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}

/// The script for one block: each command in the shell itself (so `cd` and variables
/// carry to the next), its line written down before it runs, its exit code checked after.
fn script(cmds: &[Cmd], at: &Path) -> String {
    let mut s = String::from(
        "set -o pipefail\n\
         cargo() {\n\
           if [ \"$1\" = run ]; then\n\
             shift\n\
             while [ $# -gt 0 ] && [ \"$1\" != -- ]; do case \"$1\" in -q|--quiet) shift;; *) echo \"docs test: cargo run $1 is not supported; use cargo run -q -- ARGS or mark the block no-run\" >&2; return 127;; esac; done\n\
             shift\n\
             evident \"$@\"\n\
           else\n\
             echo \"docs test: cargo $1 is not run here; mark the block no-run\" >&2; return 127\n\
           fi\n\
         }\n",
    );
    let at = at.display();
    for c in cmds {
        s.push_str(&format!("echo {} > '{at}'\n{{ {}\n}}\n", c.line, c.text));
        s.push_str(&format!(
            "__rc=$?; if [ \"$__rc\" != {} ]; then echo \"{} $__rc\" > '{at}'; exit 97; fi\n",
            c.exit, c.line
        ));
    }
    s.push_str(&format!("echo done > '{at}'\n"));
    s
}

fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Runs every runnable block of `doc` (relative to the repository root); panics naming the
/// file, line and command of the first that fails.
fn run_doc(doc: &str) {
    let text = std::fs::read_to_string(workspace().join(doc)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    copy_dir(&workspace().join("examples"), &work.join("examples"));
    let bin = bin();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    for (n, block) in blocks(&text).into_iter().enumerate() {
        if block.info.is_empty() && block.body.iter().any(|l| l.starts_with("$ ")) {
            panic!(
                "{doc}:{}: a bare fence with a `$ ` command: say ```console (or ```console no-run)",
                block.line
            );
        }
        if !runnable(&block.info) {
            continue;
        }
        if needs_services(&block.info) && !cfg!(evident_services) {
            eprintln!(
                "{doc}:{}: skipped (needs --cfg evident_services)",
                block.line
            );
            continue;
        }
        let cmds = commands(&block);
        assert!(
            !cmds.is_empty(),
            "{doc}:{}: a runnable block with no command",
            block.line
        );
        let at = dir.path().join(format!("at-{n}"));
        let (out, err) = (
            dir.path().join(format!("out-{n}")),
            dir.path().join(format!("err-{n}")),
        );
        let mut child = Command::new("bash")
            .arg("-c")
            .arg(script(&cmds, &at))
            .current_dir(&work)
            .env("PATH", &path)
            .env_remove("EVIDENT_LEDGER")
            // The default ledger goes to the state directory: this test's, not the user's.
            .env("XDG_STATE_HOME", dir.path().join("state"))
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .process_group(0)
            .spawn()
            .unwrap();
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if started.elapsed() > BLOCK_LIMIT {
                // The block's own process group, which this test made.
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", child.id())])
                    .status();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let report = std::fs::read_to_string(&at).unwrap_or_default();
        let report = report.trim();
        if status.is_some_and(|s| s.success()) && report == "done" {
            ran += cmds.len();
            continue;
        }
        let mut words = report.split_whitespace();
        let line: usize = words
            .next()
            .and_then(|w| w.parse().ok())
            .unwrap_or(block.line);
        let why = match (status, words.next()) {
            (None, _) => format!("timed out after {} s", BLOCK_LIMIT.as_secs()),
            (_, Some(rc)) => {
                let want = cmds.iter().find(|c| c.line == line).map_or(0, |c| c.exit);
                format!("exit {rc}, expected {want}")
            }
            (Some(s), None) => format!("the block's shell ended with {s}"),
        };
        let cmd = cmds
            .iter()
            .find(|c| c.line == line)
            .map_or("?", |c| c.text.as_str());
        panic!(
            "{doc}:{line}: {why}\n$ {cmd}\n--- stdout (last lines) ---\n{}\n--- stderr (last lines) ---\n{}",
            tail(&out, 30),
            tail(&err, 30)
        );
    }
    eprintln!("{doc}: {ran} commands ran");
}

/// Every document the suite covers; `every_doc_is_covered` keeps this list whole.
const DOCS: &[&str] = &[
    "README.md",
    "docs/agents.md",
    "docs/audit.md",
    "docs/belief.md",
    "docs/bench.md",
    "docs/browser.md",
    "docs/ci.md",
    "docs/eval.md",
    "docs/fuzz.md",
    "docs/gate.md",
    "docs/ledger.md",
    "docs/mcp.md",
    "docs/probes.md",
    "docs/serve.md",
    "docs/snapshots.md",
    "docs/web.md",
    "examples/billing/README.md",
];

#[test]
fn every_doc_is_covered() {
    let mut found = vec!["README.md".to_string()];
    for dir in ["docs", "examples"] {
        let mut stack = vec![workspace().join(dir)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() && p.file_name().is_some_and(|n| n != "target") {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "md") {
                    found.push(p.strip_prefix(workspace()).unwrap().display().to_string());
                }
            }
        }
    }
    for f in found {
        let f = f
            .trim_start_matches("crates/evident-cli/../../")
            .to_string();
        assert!(
            DOCS.contains(&f.as_str()),
            "{f} has no test in tests/it/docs.rs"
        );
    }
}

#[test]
fn the_extractor_reads_the_convention() {
    let doc = "```sh\n# a comment\nevident a \\\n  --b\ncat > f <<'EOF'\nx\nEOF\nevident c # exit 3: why\nevident d # exit 1 if not\n```\n\
               ```console\n$ evident e\noutput\n$ evident f \\\n    --g\n```\n```sh no-run\nx\n```\n";
    let bs = blocks(doc);
    assert_eq!(bs.len(), 3);
    assert!(runnable(&bs[0].info) && runnable(&bs[1].info) && !runnable(&bs[2].info));
    let c = commands(&bs[0]);
    let got: Vec<(usize, &str, i32)> = c
        .iter()
        .map(|c| (c.line, c.text.as_str(), c.exit))
        .collect();
    assert_eq!(
        got,
        [
            (3, "evident a \\\n  --b", 0),
            (5, "cat > f <<'EOF'\nx\nEOF", 0),
            (8, "evident c # exit 3: why", 3),
            (9, "evident d # exit 1 if not", 0),
        ]
    );
    let c = commands(&bs[1]);
    let got: Vec<(usize, &str)> = c.iter().map(|c| (c.line, c.text.as_str())).collect();
    assert_eq!(got, [(12, "evident e"), (14, "evident f \\\n    --g")]);
}

#[test]
fn a_failing_command_is_named() {
    // The runner must be able to fail: a wrong exit names its line.
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("at");
    let cmds = [
        Cmd {
            line: 7,
            text: "true".into(),
            exit: 0,
        },
        Cmd {
            line: 9,
            text: "false".into(),
            exit: 0,
        },
    ];
    let status = Command::new("bash")
        .arg("-c")
        .arg(script(&cmds, &at))
        .status()
        .unwrap();
    assert!(!status.success());
    assert_eq!(std::fs::read_to_string(&at).unwrap().trim(), "9 1");
    let cmds = [Cmd {
        line: 3,
        text: "exit 3".into(),
        exit: 3,
    }];
    // `exit` ends the script itself, so the check after it never runs: not "done".
    let _ = Command::new("bash")
        .arg("-c")
        .arg(script(&cmds, &at))
        .status()
        .unwrap();
    assert_ne!(std::fs::read_to_string(&at).unwrap().trim(), "done");
    let cmds = [Cmd {
        line: 4,
        text: "sh -c 'exit 3' # exit 3".into(),
        exit: 3,
    }];
    let status = Command::new("bash")
        .arg("-c")
        .arg(script(&cmds, &at))
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(std::fs::read_to_string(&at).unwrap().trim(), "done");
}

macro_rules! doc_tests {
    ($($name:ident => $doc:literal),* $(,)?) => {
        $(#[test] fn $name() { run_doc($doc); })*
    };
}

doc_tests! {
    readme => "README.md",
    agents => "docs/agents.md",
    audit => "docs/audit.md",
    belief => "docs/belief.md",
    bench => "docs/bench.md",
    browser => "docs/browser.md",
    ci => "docs/ci.md",
    eval => "docs/eval.md",
    fuzz => "docs/fuzz.md",
    gate => "docs/gate.md",
    ledger => "docs/ledger.md",
    mcp => "docs/mcp.md",
    probes => "docs/probes.md",
    serve => "docs/serve.md",
    snapshots => "docs/snapshots.md",
    web => "docs/web.md",
    examples_billing => "examples/billing/README.md",
}

/// Words of the project's own notes that mean nothing to a user: the requirement
/// documents ("seed 001", "the seed's"), "the peer", issue numbers. Inline code spans
/// (paths such as `tests/data/peer/`) are not prose and are skipped.
fn internal_words(line: &str) -> Option<&'static str> {
    let lower = line.to_lowercase();
    let b = lower.as_bytes();
    let word = |at: usize, len: usize| {
        let edge = |i: Option<&u8>| i.is_none_or(|c| !(c.is_ascii_alphanumeric() || *c == b'_'));
        edge(at.checked_sub(1).and_then(|i| b.get(i))) && edge(b.get(at + len))
    };
    for (at, _) in lower.match_indices("seed 0") {
        if b.get(at + 6).is_some_and(u8::is_ascii_digit)
            && b.get(at + 7).is_some_and(u8::is_ascii_digit)
        {
            return Some("seed 0NN");
        }
    }
    for (needle, name) in [
        ("the seed", "the seed"),
        ("peer", "peer"),
        ("peers", "peers"),
        ("the issue", "the issue"),
    ] {
        if lower
            .match_indices(needle)
            .any(|(at, _)| word(at, needle.len()))
        {
            return Some(name);
        }
    }
    for (at, _) in lower.match_indices("issue ") {
        if word(at, 5)
            && b.get(at + 6)
                .is_some_and(|c| c.is_ascii_digit() || *c == b'#')
        {
            return Some("issue N");
        }
    }
    None
}

/// The line without its inline code spans.
fn prose(line: &str) -> String {
    line.split('`').step_by(2).collect::<Vec<_>>().join(" ")
}

#[test]
fn no_internal_words_in_the_docs() {
    assert_eq!(internal_words("as the peer does"), Some("peer"));
    assert_eq!(internal_words("seed 001's array"), Some("seed 0NN"));
    assert_eq!(internal_words("see issue 12"), Some("issue N"));
    assert_eq!(
        internal_words("RTCPeerConnection, peer_goal, the Ed25519 seed, seed 1"),
        None
    );
    let mut found = Vec::new();
    for doc in DOCS {
        let text = std::fs::read_to_string(workspace().join(doc)).unwrap();
        let mut fenced = false;
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                continue;
            }
            let checked = if fenced {
                line.to_string()
            } else {
                prose(line)
            };
            if let Some(w) = internal_words(&checked) {
                found.push(format!("{doc}:{}: {w:?}: {line}", i + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "words of the project's notes in user docs:\n{}",
        found.join("\n")
    );
}

/// Every subcommand's name, from a `Commands:` section of its parent's help.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A wrapped description is indented further than the names.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| *w != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn no_internal_words_in_help() {
    let bin = bin();
    let help = |args: &[String]| {
        let out = Command::new(&bin)
            .args(args)
            .arg("--help")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?} --help failed");
        String::from_utf8(out.stdout).unwrap()
    };
    let mut queue = vec![Vec::<String>::new()];
    let mut seen = 0;
    let mut found = Vec::new();
    while let Some(args) = queue.pop() {
        let text = help(&args);
        seen += 1;
        for line in text.lines() {
            if let Some(w) = internal_words(line) {
                found.push(format!("evident {} --help: {w:?}: {line}", args.join(" ")));
            }
        }
        for sub in subcommands(&text) {
            let mut next = args.clone();
            next.push(sub);
            queue.push(next);
        }
    }
    assert!(seen > 20, "only {seen} help pages found");
    assert!(found.is_empty(), "{}", found.join("\n"));
}
