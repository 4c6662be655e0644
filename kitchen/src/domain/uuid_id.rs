//! The shape every UUID id of the domain shares (tickets, comments,
//! tenants, tokens): made by the server as a UUID v7, so ids sort by time;
//! shown hyphenated. One macro, so that the four cannot drift apart.

/// Declares `$name`, a UUID id: `new_v7`, `from_uuid`, `as_uuid` and
/// `Display`; with `parses`, also `FromStr` (for an id callers send).
macro_rules! uuid_id {
    ($(#[$meta:meta])* $name:ident $(, $parses:ident)?) => {
        $(#[$meta])*
        pub struct $name(uuid::Uuid);

        impl $name {
            pub(crate) fn new_v7() -> Self {
                Self(uuid::Uuid::now_v7())
            }

            pub(crate) fn from_uuid(id: uuid::Uuid) -> Self {
                Self(id)
            }

            /// The underlying UUID.
            pub fn as_uuid(&self) -> uuid::Uuid {
                self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.hyphenated().fmt(f)
            }
        }

        $(crate::domain::uuid_id::uuid_id!(@$parses $name);)?
    };
    (@parses $name:ident) => {
        impl std::str::FromStr for $name {
            type Err = uuid::Error;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                uuid::Uuid::parse_str(s).map(Self)
            }
        }
    };
}

pub(crate) use uuid_id;
