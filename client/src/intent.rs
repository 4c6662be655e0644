//! An intent: one write the caller means to happen once, and the key that
//! names it. The key is chosen here, once, before anything is journaled or
//! sent; everything after reads it from the journal entry.

use crate::action::Action;
use crate::key::OperationKey;
use crate::requests::WriteRequest;

/// One intended effect: a request and its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intent {
    key: OperationKey,
    request: WriteRequest,
}

impl Intent {
    /// A new intent, under a new key.
    pub fn new(request: WriteRequest) -> Self {
        Self {
            key: OperationKey::fresh(),
            request,
        }
    }

    /// An intent under a key the caller already has (one it journaled
    /// itself, or one a previous run printed): every attempt uses it.
    pub fn with_key(key: OperationKey, request: WriteRequest) -> Self {
        Self { key, request }
    }

    /// Its key.
    pub fn key(&self) -> &OperationKey {
        &self.key
    }

    /// What it asks for.
    pub fn request(&self) -> &WriteRequest {
        &self.request
    }

    /// Its action.
    pub fn action(&self) -> Action {
        self.request.action()
    }
}
