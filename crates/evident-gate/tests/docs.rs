//! Every whole contract shown in the docs (a TOML block with a `[policy]` table) is a
//! valid contract: `Contract::parse` accepts it, so a reader can copy it as it is.

use evident_gate::Contract;
use std::path::Path;

fn blocks(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        match (&mut current, line.trim_start()) {
            (None, l) if l.starts_with("```toml") => current = Some((i + 2, String::new())),
            (Some(_), l) if l.starts_with("```") => out.extend(current.take()),
            (Some((_, body)), _) => {
                body.push_str(line);
                body.push('\n');
            }
            _ => {}
        }
    }
    out
}

#[test]
fn contracts_in_the_docs_parse() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut checked = Vec::new();
    for doc in ["docs/probes.md", "docs/gate.md", "README.md"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        for (line, body) in blocks(&text) {
            if !body.lines().any(|l| l.trim() == "[policy]") {
                continue;
            }
            let name = format!("{doc}:{line}.toml");
            if let Err(e) = Contract::parse(body.as_bytes(), &name) {
                panic!("{name}: {e}\n{body}");
            }
            checked.push(name);
        }
    }
    // The postcondition, github_pr and private examples are among them.
    for needle in ["postcondition", "github_pr", "private = true"] {
        let found = ["docs/probes.md", "docs/gate.md"].iter().any(|doc| {
            let text = std::fs::read_to_string(root.join(doc)).unwrap();
            blocks(&text)
                .iter()
                .any(|(_, b)| b.contains("[policy]") && b.contains(needle))
        });
        assert!(found, "no whole contract in the docs shows {needle}");
    }
    assert!(checked.len() >= 4, "{checked:?}");
}
