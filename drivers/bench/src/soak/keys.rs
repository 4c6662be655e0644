//! The soak's operation keys, and how a ticket carries the key it was made
//! under: the count at the end finds each key's tickets in the database by
//! their title, without trusting any answer.

/// Every soak ticket goes to this project.
pub(crate) const PROJECT: &str = "soak";

/// What a soak ticket's title starts with; the key follows.
const TITLE_PREFIX: &str = "soak ";

/// The key of client `client`'s `n`th ticket (unique within a run's fresh
/// database).
pub(crate) fn key(client: usize, n: usize) -> String {
    format!("soak-c{client}-k{n}")
}

/// The key a sabotaged client sends on its `attempt`th retry of `key`
/// (`--fresh-key-retries`): a client without idempotency, whose every try
/// is a new operation. The title still carries `key`.
pub(crate) fn fresh_retry_key(key: &str, attempt: u32) -> String {
    format!("{key}-r{attempt}")
}

/// The title of the ticket made under `key`.
pub(crate) fn title(key: &str) -> String {
    format!("{TITLE_PREFIX}{key}")
}

/// The key a soak ticket's title carries, if it is one.
pub(crate) fn key_of(title: &str) -> Option<&str> {
    title.strip_prefix(TITLE_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_gives_back_its_key() {
        let key = key(3, 14);
        assert_eq!(key_of(&title(&key)), Some(key.as_str()));
        assert_eq!(key_of("another ticket"), None);
    }
}
