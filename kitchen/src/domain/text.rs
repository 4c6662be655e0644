//! The one rule for caller-supplied text that can reach a database text
//! column: it must not contain U+0000 (NUL).
//!
//! Every parser of such text (titles, descriptions, project ids, cursors,
//! tenant names) applies [`refuse_nul`] first, before its own shape rules,
//! so a NUL anywhere is always reported the same way (`nul_character`),
//! whichever field it is in. The kitchen decides this, not the database:
//! PostgreSQL would fail the insert (a 500 that tells the caller to retry a
//! request that can never succeed), SQLite would store it, and the two
//! backends would disagree on what is valid.

use super::violation::FieldViolation;

/// The code of a [`FieldViolation`] for text that contains U+0000.
pub(crate) const NUL_CHARACTER: &str = "nul_character";

/// Refuses `raw` if it contains U+0000, naming `field` and where the first
/// one is.
///
/// U+0000 is the only character refused here, because it is the only one a
/// PostgreSQL `text` value cannot hold: Rust strings are always valid UTF-8
/// (no surrogates, no overlong forms, no stray bytes), and PostgreSQL's
/// UTF-8 text accepts every other Unicode scalar value, unassigned and
/// private-use ones included. Whether other control characters are allowed
/// is each field's own rule (a title refuses them, a description keeps line
/// breaks and tabs).
pub(crate) fn refuse_nul(field: &str, raw: &str) -> Result<(), FieldViolation> {
    match raw.chars().position(|c| c == '\0') {
        None => Ok(()),
        Some(position) => Err(FieldViolation::new(
            field,
            NUL_CHARACTER,
            format!(
                "{field} must not contain the NUL character (U+0000); found one at character \
                 position {position} (counting from 0). It cannot be stored: remove every NUL \
                 (often a C string terminator or a stray byte of binary data) and send the \
                 request again"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_text_without_nul_control_characters_included() {
        for ok in [
            "",
            "plain",
            "line\nbreak\ttab\r",
            "\u{1}\u{7f}\u{9f}",
            "🦀\u{301}",
        ] {
            assert_eq!(refuse_nul("description", ok), Ok(()), "{ok:?}");
        }
    }

    #[test]
    fn refuses_nul_anywhere_naming_the_field_and_the_position() {
        for (raw, position) in [("\0", 0), ("ab\0", 2), ("é🦀\0x\0", 2)] {
            let violation = refuse_nul("title", raw).expect_err("NUL is refused");
            assert_eq!(violation.field, "title");
            assert_eq!(violation.code, "nul_character");
            assert!(
                violation.message.contains("U+0000")
                    && violation.message.contains(&format!("position {position} "))
                    && violation.message.contains("remove"),
                "says what is wrong, where, and what to do: {}",
                violation.message
            );
        }
    }
}
