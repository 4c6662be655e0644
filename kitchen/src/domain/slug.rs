//! The identifier shape shared by project ids and tenant names:
//! `[a-z0-9][a-z0-9_-]{0,63}`.

/// Longest slug accepted, in bytes (slugs are ASCII, so also in characters).
pub(crate) const MAX_SLUG_LEN: usize = 64;

/// Whether `s` is a slug: lowercase ASCII letters and digits, then also `_`
/// and `-`, 1 to 64 characters.
pub(crate) fn is_slug(s: &str) -> bool {
    let bytes = s.as_bytes();
    let Some((first, rest)) = bytes.split_first() else {
        return false;
    };
    bytes.len() <= MAX_SLUG_LEN
        && (first.is_ascii_lowercase() || first.is_ascii_digit())
        && rest
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_' || *b == b'-')
}

/// The message a caller sees when a slug is malformed.
pub(crate) fn slug_rule() -> String {
    format!(
        "must be 1 to {MAX_SLUG_LEN} characters of lowercase letters, digits, '_' or '-', \
         starting with a letter or digit (for example \"billing-api\")"
    )
}

#[cfg(test)]
mod tests {
    use super::is_slug;

    #[test]
    fn accepts_and_rejects_the_documented_shape() {
        for ok in ["a", "0", "billing-api", "a_b-c9", &"a".repeat(64)] {
            assert!(is_slug(ok), "{ok:?} should be a slug");
        }
        for bad in ["", "-a", "_a", "A", "a b", "a.b", "é", &"a".repeat(65)] {
            assert!(!is_slug(bad), "{bad:?} should not be a slug");
        }
    }
}
