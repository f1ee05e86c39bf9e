//! droid-decide (in progress).
pub mod prompt;
pub mod provider;
pub mod response;
pub mod widgets;

/// Test credentials for sign-in and sign-up forms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Credentials {
    pub email: Option<String>,
    pub username: Option<String>,
    pub password: Option<String>,
}
