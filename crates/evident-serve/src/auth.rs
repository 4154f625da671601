//! Bearer tokens and who may do what.
//!
//! The tokens file (`--tokens FILE`) is TOML, one `[[token]]` per client:
//! `name = "ci"` and `sha256 = "<hex of the token's SHA-256>"`. The server keeps only
//! the hashes: a presented token is hashed and compared with every stored hash in
//! constant time, so neither the file nor the timing of a refusal gives a token away.
//! `evident token new NAME` makes a token and prints the line to add.
//!
//! Write routes always need a token. Read routes are open only when the server
//! *listens* on a loopback address: decided by the listen address, never by the
//! peer's address, which a local reverse proxy makes loopback for everyone.

use serde::Deserialize;
use sha2::{Digest as _, Sha256};
use std::path::Path;
use subtle::ConstantTimeEq as _;

/// Largest tokens file read.
const MAX_TOKENS_BYTES: u64 = 1024 * 1024;

/// The token prefix (`evt_`), so a leaked token is recognisable in a scan.
pub const TOKEN_PREFIX: &str = "evt_";

/// The known tokens, by hash.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    entries: Vec<(String, [u8; 32])>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    token: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    sha256: String,
}

/// Why a tokens file does not load.
#[derive(Debug, thiserror::Error)]
pub enum TokensError {
    /// The file could not be read.
    #[error("{path}: cannot read the tokens file")]
    Read {
        /// The tokens file, as given.
        path: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The file is larger than a tokens file may be.
    #[error("{path}: larger than {MAX_TOKENS_BYTES} bytes")]
    TooLarge {
        /// The tokens file, as given.
        path: String,
    },
    /// The file's text is not a valid tokens file.
    #[error("{path}")]
    Invalid {
        /// The tokens file, as given.
        path: String,
        /// What is wrong, naming the entry.
        source: InvalidTokens,
    },
}

evident_format::message_error! {
    /// A tokens file's text is refused: its entry and why. A leaf: the message is all.
    pub struct InvalidTokens;
}

/// Whether `name` may name a token (it is recorded in the ledger as who asked).
pub fn valid_token_name(name: &str) -> bool {
    evident_pipeline::catalog::valid_name(name)
}

impl Tokens {
    /// Reads a tokens file; errors name the file and the entry.
    pub fn load(path: &Path) -> Result<Tokens, TokensError> {
        use std::io::Read as _;
        let shown = path.display().to_string();
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_TOKENS_BYTES + 1).read_to_string(&mut text))
            .map_err(|source| TokensError::Read {
                path: shown.clone(),
                source,
            })?;
        if text.len() as u64 > MAX_TOKENS_BYTES {
            return Err(TokensError::TooLarge { path: shown });
        }
        Tokens::parse(&text).map_err(|source| TokensError::Invalid {
            path: shown,
            source,
        })
    }

    /// Parses the tokens file's text.
    pub fn parse(text: &str) -> Result<Tokens, InvalidTokens> {
        let file: File = toml::from_str(text).map_err(|e| {
            format!("not a tokens file ([[token]] name = \"…\" sha256 = \"<64 hex>\"): {e}")
        })?;
        let mut entries = Vec::new();
        for (i, e) in file.token.into_iter().enumerate() {
            if !valid_token_name(&e.name) {
                return Err(format!(
                    "token[{i}].name: {:?} is not a name (1-64 letters, digits, '_' or '-')",
                    e.name
                )
                .into());
            }
            let mut hash = [0u8; 32];
            if e.sha256.len() != 64 || hex::decode_to_slice(&e.sha256, &mut hash).is_err() {
                return Err(format!(
                    "token[{i}].sha256: not 64 hex digits (the SHA-256 of the token, as `evident token new` prints it)"
                ).into());
            }
            if entries.iter().any(|(n, _)| n == &e.name) {
                return Err(format!("token[{i}].name: {:?} is listed twice", e.name).into());
            }
            if entries.iter().any(|(_, h)| h == &hash) {
                return Err(
                    format!("token[{i}].sha256: the same token is listed under two names").into(),
                );
            }
            entries.push((e.name, hash));
        }
        Ok(Tokens { entries })
    }

    /// How many tokens are known.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no token is known.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The name of the token presented, if it is known. Every stored hash is compared
    /// (no early exit), each in constant time.
    pub fn check(&self, presented: &str) -> Option<&str> {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let mut found: Option<&str> = None;
        for (name, hash) in &self.entries {
            if bool::from(hash.ct_eq(&digest)) {
                found = Some(name.as_str());
            }
        }
        found
    }
}

/// A fresh token and its hash (hex), for `evident token new`.
pub fn new_token() -> (String, String) {
    use rand::RngCore as _;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let token = format!("{TOKEN_PREFIX}{}", hex::encode(bytes));
    let hash = hex::encode(Sha256::digest(token.as_bytes()));
    (token, hash)
}

/// The bearer token of an `Authorization` header value, if it is one.
pub fn bearer(value: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(value).ok()?;
    let (scheme, token) = text.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim();
    (!token.is_empty() && token.len() <= 512).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_checked_by_hash_and_bad_files_are_named() {
        let (token, hash) = new_token();
        assert!(token.starts_with(TOKEN_PREFIX) && token.len() == 68);
        let t = Tokens::parse(&format!("[[token]]\nname = \"ci\"\nsha256 = \"{hash}\"\n")).unwrap();
        assert_eq!(t.check(&token), Some("ci"));
        assert_eq!(t.check(&hash), None, "the hash itself is not the token");
        assert_eq!(t.check(""), None);
        assert_eq!(t.check(&token[..67]), None);
        for (bad, why) in [
            ("[[token]]\nname = \"a b\"\nsha256 = \"00\"", "name"),
            ("[[token]]\nname = \"ci\"\nsha256 = \"zz\"", "sha256"),
            (
                "[[token]]\nname = \"ci\"\nsha256 = \"ab\"\nscope = 1",
                "unknown field",
            ),
            (
                &format!(
                    "[[token]]\nname = \"ci\"\nsha256 = \"{hash}\"\n[[token]]\nname = \"ci\"\nsha256 = \"{}\"",
                    "0".repeat(64)
                ),
                "twice",
            ),
        ] {
            let e = Tokens::parse(bad).unwrap_err();
            assert!(e.0.contains(why), "{e}");
        }
        assert_eq!(bearer(b"Bearer abc"), Some("abc"));
        assert_eq!(bearer(b"bearer  abc "), Some("abc"));
        assert_eq!(bearer(b"Basic abc"), None);
        assert_eq!(bearer(b"Bearer "), None);
        assert_eq!(bearer(b"\xff\xfe"), None);
    }
}
