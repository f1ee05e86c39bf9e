//! Values that must never reach a log, an event or the database in clear.

use std::fmt;

/// What an input action types for the test password. Decisions carry this placeholder, never the
/// password; droid-act puts the password in at typing time.
pub const TEST_PASSWORD_PLACEHOLDER: &str = "{{test_password}}";

/// A value that must never reach a log in clear.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value in clear, for the one place that needs it (an HTTP header, a typed field).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}
