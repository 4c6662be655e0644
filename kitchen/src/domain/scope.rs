//! Access scopes: what a credential may do.
//!
//! Two scopes, spelled as OAuth scopes so that one vocabulary serves both
//! kinds of bearer token: an API token carries a set chosen when it is
//! issued (stored with it), and an identity provider's access token grants
//! a set in its `scope` claim. `tickets:read` covers every read (tickets,
//! comments, history, operation status, a preview); `tickets:write` the
//! writes. Which request needs which scope is the doors' one policy (the
//! `access` crate); the kitchen only parses, stores and reads the sets.

use std::fmt;

/// One scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// `tickets:read`: every read, status lookups and previews.
    Read,
    /// `tickets:write`: creating, changing, moving and commenting on tickets.
    Write,
}

impl Scope {
    /// Every scope, in the order they are written out.
    pub const ALL: [Scope; 2] = [Scope::Read, Scope::Write];

    /// The scope's name, as OAuth and `tickets token issue --scope` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "tickets:read",
            Self::Write => "tickets:write",
        }
    }

    /// The scope with this name.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == raw)
    }

    fn bit(self) -> u8 {
        match self {
            Self::Read => 1,
            Self::Write => 2,
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Scopes(u8);

impl Scopes {
    /// Both scopes: what an API token carries unless issued with fewer.
    pub const ALL: Scopes = Scopes(3);
    /// No scope at all: such a credential may do nothing.
    pub const NONE: Scopes = Scopes(0);

    /// The set of one scope.
    pub fn only(scope: Scope) -> Self {
        Self(scope.bit())
    }

    /// This set and `scope`.
    #[must_use]
    pub fn with(self, scope: Scope) -> Self {
        Self(self.0 | scope.bit())
    }

    /// Whether `scope` is in the set.
    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    /// Whether every scope of `other` is in the set.
    pub fn covers(self, other: Scopes) -> bool {
        self.0 & other.0 == other.0
    }

    /// The scopes of `needed` this set lacks.
    #[must_use]
    pub fn missing_from(self, needed: Scopes) -> Scopes {
        Scopes(needed.0 & !self.0)
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The scopes, in [`Scope::ALL`]'s order.
    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL.into_iter().filter(move |s| self.contains(*s))
    }

    /// Parses a list of scope names separated by spaces or commas (the
    /// command line, and the stored form): every name must be known, and at
    /// least one given. The error says what the names are.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let mut scopes = Self::NONE;
        for word in raw.split([' ', ',']).filter(|w| !w.is_empty()) {
            match Scope::parse(word) {
                Some(scope) => scopes = scopes.with(scope),
                None => {
                    return Err(format!(
                        "unknown scope {word:?}: the scopes are {}",
                        Self::ALL
                    ));
                }
            }
        }
        if scopes.is_empty() {
            return Err(format!("name at least one scope: {}", Self::ALL));
        }
        Ok(scopes)
    }

    /// The scopes this service knows among `words` (an access token's
    /// `scope` claim, split): scopes meant for other resources are ignored.
    pub fn granted<'a>(words: impl IntoIterator<Item = &'a str>) -> Self {
        words
            .into_iter()
            .filter_map(Scope::parse)
            .fold(Self::NONE, Self::with)
    }
}

impl fmt::Display for Scopes {
    /// The names separated by single spaces, as OAuth writes a scope list.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for scope in self.iter() {
            if !first {
                f.write_str(" ")?;
            }
            f.write_str(scope.as_str())?;
            first = false;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_parses_to_its_scopes_and_writes_back_the_same() {
        assert_eq!(Scopes::parse("tickets:read"), Ok(Scopes::only(Scope::Read)));
        assert_eq!(Scopes::parse("tickets:write,tickets:read"), Ok(Scopes::ALL));
        assert_eq!(Scopes::ALL.to_string(), "tickets:read tickets:write");
        assert_eq!(Scopes::parse(&Scopes::ALL.to_string()), Ok(Scopes::ALL));
        let unknown = Scopes::parse("tickets:admin").expect_err("unknown");
        assert!(unknown.contains("tickets:read tickets:write"), "{unknown}");
        assert!(Scopes::parse(" ").is_err(), "at least one");
    }

    #[test]
    fn a_grant_keeps_only_the_scopes_this_service_knows() {
        assert_eq!(
            Scopes::granted("openid tickets:write profile".split(' ')),
            Scopes::only(Scope::Write)
        );
        assert!(Scopes::granted("".split(' ')).is_empty());
    }

    #[test]
    fn covering_and_missing_scopes() {
        let read = Scopes::only(Scope::Read);
        assert!(Scopes::ALL.covers(read));
        assert!(!read.covers(Scopes::ALL));
        assert_eq!(read.missing_from(Scopes::ALL), Scopes::only(Scope::Write));
        assert!(Scopes::ALL.missing_from(read).is_empty());
    }
}
