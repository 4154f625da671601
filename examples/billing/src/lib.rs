//! The code the example agent claims to have changed: US ZIP code validation.

/// A five-digit US ZIP code.
pub fn valid_zip(zip: &str) -> bool {
    zip.len() == 5 && zip.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::valid_zip;

    #[test]
    fn accepts_five_digits() {
        assert!(valid_zip("94107"));
    }

    #[test]
    fn refuses_anything_else() {
        assert!(!valid_zip("9410"));
        assert!(!valid_zip("94107-1234"));
        assert!(!valid_zip("9410x"));
    }
}
