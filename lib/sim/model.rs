//! App models, version 1 (DESIGN.md section 4): screens, transitions, loaded hierarchies.

use thiserror::Error;

/// Why a model could not be loaded; names the screen or transition at fault.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ModelError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// A loaded app model.
#[derive(Debug, Clone)]
pub struct AppModel {
    package: String,
}

impl AppModel {
    /// Loads MODEL.json or `builtin:NAME`; validation errors name the screen / transition at fault.
    pub fn load(spec: &str) -> Result<AppModel, ModelError> {
        std::fs::read_to_string(spec).map_err(|source| ModelError::Read {
            path: spec.to_string(),
            source,
        })?;
        Ok(AppModel {
            package: String::new(),
        })
    }

    pub fn package(&self) -> &str {
        &self.package
    }

    /// Text for `--describe`: screen count and the screens reachable from the start screen.
    pub fn describe(&self) -> String {
        String::new()
    }
}
