//! user_config.db and the one settings resolver of the toolkit.
//!
//! Settings (`user_config`: key, value, value_type, updated_at) and secrets (`secrets`: key,
//! encrypted_value, updated_at) follow the reference crawler's user_config.db. Secrets are encrypted at rest
//! with AES-256-GCM; the key is derived with PBKDF2-HMAC-SHA256 ([`KDF_ITERATIONS`] rounds, a
//! random salt kept in the database) from a machine-bound id (`/etc/machine-id`, else host name
//! and user), so a copied database is useless elsewhere. Each ciphertext is bound to its key
//! name (AEAD associated data), so swapping rows does not swap secrets.
//!
//! [`Settings::resolve`] answers every "what value do I use" question with one precedence:
//! command-line flag > user_config.db > environment > built-in default. A key is written in
//! lower case in the database (`gemini_api_key`) and in upper case in the environment
//! (`GEMINI_API_KEY`). Secrets come back as [`Secret`], whose `Debug` and `Display` redact.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use rusqlite::{params, Connection, OptionalExtension};

use crate::secret::Secret;

/// PBKDF2 rounds for new databases (existing ones keep the count they were created with).
pub const KDF_ITERATIONS: u32 = 210_000;
const SALT_BYTES: usize = 16;
const NONCE_BYTES: usize = 12;
/// Format tag in front of every stored ciphertext.
const CIPHER_TAG: &[u8] = b"droid-aes256gcm-v1:";

/// How a setting's text is to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    String,
    Int,
    Float,
    Bool,
    Json,
}

impl ValueType {
    pub fn as_str(self) -> &'static str {
        match self {
            ValueType::String => "string",
            ValueType::Int => "int",
            ValueType::Float => "float",
            ValueType::Bool => "bool",
            ValueType::Json => "json",
        }
    }

    pub fn parse(name: &str) -> Option<ValueType> {
        [
            ValueType::String,
            ValueType::Int,
            ValueType::Float,
            ValueType::Bool,
            ValueType::Json,
        ]
        .into_iter()
        .find(|t| t.as_str() == name)
    }

    /// Whether `value` is a valid text of this type.
    fn accepts(self, value: &str) -> bool {
        match self {
            ValueType::String => true,
            ValueType::Int => value.parse::<i64>().is_ok(),
            ValueType::Float => value.parse::<f64>().is_ok(),
            ValueType::Bool => matches!(value, "true" | "false"),
            ValueType::Json => serde_json::from_str::<serde_json::Value>(value).is_ok(),
        }
    }
}

/// What went wrong with user_config.db.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("opening {path}")]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{context}")]
    Sql {
        context: &'static str,
        #[source]
        source: rusqlite::Error,
    },
    #[error("setting {key}: {value:?} is not a valid {}", kind.as_str())]
    BadValue {
        key: String,
        value: String,
        kind: ValueType,
    },
    #[error("secret {key} cannot be decrypted on this machine (copied from another machine, or damaged)")]
    Decrypt { key: String },
    #[error("encrypting secret {key} failed")]
    Encrypt { key: String },
    #[error("reading the value")]
    Value(#[source] std::io::Error),
}

trait Context<T> {
    fn ctx(self, context: &'static str) -> Result<T, Error>;
}

impl<T> Context<T> for rusqlite::Result<T> {
    fn ctx(self, context: &'static str) -> Result<T, Error> {
        self.map_err(|source| Error::Sql { context, source })
    }
}

/// One stored setting.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    pub key: String,
    pub value: String,
    pub value_type: ValueType,
    pub updated_at: String,
}

/// One row of [`UserConfig::list`]: a setting, or a secret (shown without its value).
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Setting(Setting),
    Secret { key: String, updated_at: String },
}

impl fmt::Display for Entry {
    /// `key<TAB>type<TAB>value`, with `<redacted>` for a secret's value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entry::Setting(s) => write!(f, "{}\t{}\t{}", s.key, s.value_type.as_str(), s.value),
            Entry::Secret { key, .. } => write!(f, "{key}\tsecret\t<redacted>"),
        }
    }
}

/// The default place of user_config.db: `$XDG_CONFIG_HOME/droid/`, else `~/.config/droid/`.
pub fn default_path(xdg_config_home: Option<&str>, home: Option<&str>) -> PathBuf {
    let base = match (xdg_config_home, home) {
        (Some(xdg), _) if !xdg.is_empty() => PathBuf::from(xdg),
        (_, Some(home)) if !home.is_empty() => Path::new(home).join(".config"),
        _ => PathBuf::from("."),
    };
    base.join("droid").join("user_config.db")
}

/// [`default_path`] for this process's `XDG_CONFIG_HOME` and `HOME`.
pub fn default_path_from_env() -> PathBuf {
    let xdg = std::env::var("XDG_CONFIG_HOME").ok();
    let home = std::env::var("HOME").ok();
    default_path(xdg.as_deref(), home.as_deref())
}

/// A value given on stdin (`config set KEY --secret` without a value): its first line without
/// the line ending, so a key typed at a prompt or piped from `echo` is stored as it was meant.
/// Nothing there (`< /dev/null`, an empty first line) is an `InvalidInput` error: storing an
/// empty key would only fail later, far from the cause.
pub fn read_value(mut input: impl std::io::BufRead) -> std::io::Result<String> {
    let mut line = String::new();
    input.read_line(&mut line)?;
    let value = line.trim_end_matches(['\r', '\n']);
    if value.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "no value on standard input (pipe one in, or give it after the key; \
             `config unset KEY` removes a setting)",
        ));
    }
    Ok(value.to_string())
}

/// The machine-bound id the secret key is derived from: `/etc/machine-id`, else the host name
/// and the user.
pub fn machine_id() -> Secret {
    for file in ["/etc/machine-id", "/var/lib/dbus/machine-id"] {
        if let Ok(id) = std::fs::read_to_string(file) {
            if !id.trim().is_empty() {
                return Secret::new(format!("machine-id:{}", id.trim()));
            }
        }
    }
    let host = crate::store::host_name();
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("USERNAME"))
        .unwrap_or_default();
    Secret::new(format!("host:{host}|user:{user}"))
}

/// An open user_config.db.
pub struct UserConfig {
    conn: Connection,
    machine_id: Secret,
    key: Option<[u8; 32]>,
}

impl UserConfig {
    /// Opens (creating if needed) user_config.db, bound to this machine.
    pub fn open(path: &Path) -> Result<UserConfig, Error> {
        UserConfig::open_bound_to(path, machine_id())
    }

    /// Opens user_config.db with secrets bound to the given machine id.
    pub fn open_bound_to(path: &Path, machine_id: Secret) -> Result<UserConfig, Error> {
        let open_err = |source| Error::Open {
            path: path.to_path_buf(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            // A missing folder surfaces as the open error just below.
            let _ = std::fs::create_dir_all(parent);
        }
        let conn = Connection::open(path).map_err(open_err)?;
        restrict_permissions(path);
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(open_err)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS user_config (
                key TEXT PRIMARY KEY, value TEXT, value_type TEXT NOT NULL, updated_at TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS secrets (
                key TEXT PRIMARY KEY, encrypted_value BLOB NOT NULL, updated_at TEXT NOT NULL);
             CREATE INDEX IF NOT EXISTS idx_user_config_updated ON user_config(updated_at);
             CREATE TABLE IF NOT EXISTS secret_kdf (
                id INTEGER PRIMARY KEY CHECK (id = 1), salt BLOB NOT NULL, iterations INTEGER NOT NULL);",
        )
        .map_err(open_err)?;
        Ok(UserConfig {
            conn,
            machine_id,
            key: None,
        })
    }

    /// Stores a setting after checking that the value reads as its type.
    pub fn set(&self, key: &str, value: &str, value_type: ValueType) -> Result<(), Error> {
        let key = normalize(key);
        if !value_type.accepts(value) {
            return Err(Error::BadValue {
                key,
                value: value.to_string(),
                kind: value_type,
            });
        }
        self.conn
            .execute(
                "INSERT INTO user_config (key, value, value_type, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value,
                 value_type = excluded.value_type, updated_at = excluded.updated_at",
                params![key, value, value_type.as_str(), crate::events::now_ts()],
            )
            .ctx("storing a setting")?;
        // A key is a setting or a secret, never both.
        self.conn
            .execute("DELETE FROM secrets WHERE key = ?1", [&key])
            .ctx("storing a setting")?;
        Ok(())
    }

    pub fn get(&self, key: &str) -> Result<Option<Setting>, Error> {
        self.conn
            .query_row(
                "SELECT key, value, value_type, updated_at FROM user_config WHERE key = ?1",
                [normalize(key)],
                |r| {
                    let kind: String = r.get(2)?;
                    Ok(Setting {
                        key: r.get(0)?,
                        value: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                        value_type: ValueType::parse(&kind).unwrap_or(ValueType::String),
                        updated_at: r.get(3)?,
                    })
                },
            )
            .optional()
            .ctx("reading a setting")
    }

    /// Encrypts and stores a secret.
    pub fn set_secret(&mut self, key: &str, value: &Secret) -> Result<(), Error> {
        let key = normalize(key);
        let cipher = self.cipher()?;
        let nonce: [u8; NONCE_BYTES] = rand::random();
        let sealed = cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: value.expose().as_bytes(),
                    aad: key.as_bytes(),
                },
            )
            .map_err(|_| Error::Encrypt { key: key.clone() })?;
        let mut blob = CIPHER_TAG.to_vec();
        blob.extend_from_slice(&nonce);
        blob.extend_from_slice(&sealed);
        self.conn
            .execute(
                "INSERT INTO secrets (key, encrypted_value, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(key) DO UPDATE SET encrypted_value = excluded.encrypted_value,
                 updated_at = excluded.updated_at",
                params![key, blob, crate::events::now_ts()],
            )
            .ctx("storing a secret")?;
        self.conn
            .execute("DELETE FROM user_config WHERE key = ?1", [&key])
            .ctx("storing a secret")?;
        Ok(())
    }

    /// Decrypts a stored secret.
    pub fn get_secret(&mut self, key: &str) -> Result<Option<Secret>, Error> {
        let key = normalize(key);
        let blob: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT encrypted_value FROM secrets WHERE key = ?1",
                [&key],
                |r| r.get(0),
            )
            .optional()
            .ctx("reading a secret")?;
        let Some(blob) = blob else {
            return Ok(None);
        };
        let decrypt_err = || Error::Decrypt { key: key.clone() };
        let body = blob.strip_prefix(CIPHER_TAG).ok_or_else(decrypt_err)?;
        if body.len() < NONCE_BYTES {
            return Err(decrypt_err());
        }
        let (nonce, sealed) = body.split_at(NONCE_BYTES);
        let cipher = self.cipher()?;
        let clear = cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: sealed,
                    aad: key.as_bytes(),
                },
            )
            .map_err(|_| decrypt_err())?;
        let text = String::from_utf8(clear).map_err(|_| decrypt_err())?;
        Ok(Some(Secret::new(text)))
    }

    /// A key's value for people: a setting's value, a secret as `<redacted>` unless `reveal`.
    pub fn show(&mut self, key: &str, reveal: bool) -> Result<Option<String>, Error> {
        if let Some(secret) = self.get_secret(key)? {
            return Ok(Some(if reveal {
                secret.expose().to_string()
            } else {
                secret.to_string()
            }));
        }
        Ok(self.get(key)?.map(|setting| setting.value))
    }

    /// Removes a setting or secret; `false` when there was none.
    pub fn unset(&self, key: &str) -> Result<bool, Error> {
        let key = normalize(key);
        let mut removed = 0;
        for sql in [
            "DELETE FROM user_config WHERE key = ?1",
            "DELETE FROM secrets WHERE key = ?1",
        ] {
            removed += self.conn.execute(sql, [&key]).ctx("removing a setting")?;
        }
        Ok(removed > 0)
    }

    /// Every setting and secret (secrets without their values), by key.
    pub fn list(&self) -> Result<Vec<Entry>, Error> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT key, value, value_type, updated_at, 0 FROM user_config
                 UNION ALL SELECT key, NULL, 'secret', updated_at, 1 FROM secrets ORDER BY 1",
            )
            .ctx("listing settings")?;
        let rows = stmt
            .query_map([], |r| {
                let key: String = r.get(0)?;
                let updated_at: String = r.get(3)?;
                if r.get::<_, i64>(4)? == 1 {
                    return Ok(Entry::Secret { key, updated_at });
                }
                let kind: String = r.get(2)?;
                Ok(Entry::Setting(Setting {
                    key,
                    value: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                    value_type: ValueType::parse(&kind).unwrap_or(ValueType::String),
                    updated_at,
                }))
            })
            .ctx("listing settings")?;
        rows.collect::<rusqlite::Result<_>>()
            .ctx("listing settings")
    }

    fn is_secret(&self, key: &str) -> Result<bool, Error> {
        self.conn
            .query_row("SELECT 1 FROM secrets WHERE key = ?1", [key], |_| Ok(()))
            .optional()
            .map(|found| found.is_some())
            .ctx("reading a secret")
    }

    /// The AES key, derived once per open database.
    fn cipher(&mut self) -> Result<Aes256Gcm, Error> {
        if self.key.is_none() {
            let (salt, iterations) = self.kdf_parameters()?;
            let mut key = [0u8; 32];
            pbkdf2::pbkdf2_hmac::<sha2::Sha256>(
                self.machine_id.expose().as_bytes(),
                &salt,
                iterations,
                &mut key,
            );
            self.key = Some(key);
        }
        let key = self.key.unwrap_or_default();
        Ok(Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&key)))
    }

    /// The database's salt and round count, created on first use.
    fn kdf_parameters(&self) -> Result<(Vec<u8>, u32), Error> {
        let salt: [u8; SALT_BYTES] = rand::random();
        self.conn
            .execute(
                "INSERT OR IGNORE INTO secret_kdf (id, salt, iterations) VALUES (1, ?1, ?2)",
                params![salt.to_vec(), KDF_ITERATIONS],
            )
            .ctx("creating the key salt")?;
        self.conn
            .query_row(
                "SELECT salt, iterations FROM secret_kdf WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .ctx("reading the key salt")
    }
}

#[cfg(unix)]
fn restrict_permissions(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    // Best effort: the secrets are encrypted anyway; this keeps other users from even copying.
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
}

#[cfg(not(unix))]
fn restrict_permissions(_path: &Path) {}

fn normalize(key: &str) -> String {
    key.trim().to_ascii_lowercase()
}

/// Settings the toolkit knows: whether they are secret, and their built-in default.
pub const KNOWN: &[(&str, bool, Option<&str>)] = &[
    ("gemini_api_key", true, None),
    ("openrouter_api_key", true, None),
    ("openai_api_key", true, None),
    ("ollama_base_url", false, Some("http://localhost:11434")),
    ("openai_base_url", false, None),
    ("test_username", false, None),
    ("test_email", false, None),
    ("test_password", true, None),
    // Crawl integrations (docs/integrations.md).
    ("mobsf_api_key", true, None),
    ("mobsf_url", false, Some("http://localhost:8000")),
    ("pcapdroid_api_key", true, None),
    // What to crawl with and how long (droid-crawl, droid-decide); environment `DROID_<KEY>`.
    ("decider", false, Some("heuristic")),
    ("model", false, None),
    ("system_prompt", false, None),
    ("allowed_packages", false, None),
    ("max_steps", false, Some("15")),
    ("max_duration", false, Some("600")),
    // The hybrid decider (docs/decide.md): its model's provider, K, L and its share of the steps.
    ("hybrid_provider", false, Some("gemini")),
    ("plateau_steps", false, Some("6")),
    ("plateau_model_calls", false, Some("4")),
    ("model_share", false, Some("20")),
];

/// Settings whose environment variable is `DROID_<KEY>` rather than `<KEY>`: names such as
/// `MODEL` are too common to read from anyone's environment.
const DROID_ENV: &[&str] = &[
    "decider",
    "model",
    "system_prompt",
    "allowed_packages",
    "max_steps",
    "max_duration",
    "hybrid_provider",
    "plateau_steps",
    "plateau_model_calls",
    "model_share",
];

/// The environment variable a setting is read from.
pub fn env_name(key: &str) -> String {
    let key = normalize(key);
    match DROID_ENV.contains(&key.as_str()) {
        true => format!("DROID_{}", key.to_ascii_uppercase()),
        false => key.to_ascii_uppercase(),
    }
}

/// Environment names kept from before the resolver (`DROID_TEST_PASSWORD`): each stands for its
/// canonical name when that one is unset.
const ENV_ALIASES: &[(&str, &str)] = &[
    ("DROID_TEST_EMAIL", "TEST_EMAIL"),
    ("DROID_TEST_USERNAME", "TEST_USERNAME"),
    ("DROID_TEST_PASSWORD", "TEST_PASSWORD"),
];

fn with_env_aliases(env: impl IntoIterator<Item = (String, String)>) -> HashMap<String, String> {
    let mut env: HashMap<String, String> = env.into_iter().collect();
    for (alias, canonical) in ENV_ALIASES {
        let canonical_set = env.get(*canonical).is_some_and(|v| !v.is_empty());
        if let (false, Some(value)) = (canonical_set, env.get(*alias).cloned()) {
            env.insert(canonical.to_string(), value);
        }
    }
    env
}

/// Where a resolved value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Flag,
    UserConfig,
    Environment,
    Default,
}

/// A resolved value; secret ones are wrapped so they never print in clear.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Plain(String),
    Secret(Secret),
}

impl Value {
    pub fn expose(&self) -> &str {
        match self {
            Value::Plain(v) => v,
            Value::Secret(s) => s.expose(),
        }
    }
}

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub value: Value,
    pub source: Source,
}

/// The one resolver: flag > user_config.db > environment > default.
pub struct Settings {
    user: Option<UserConfig>,
    env: HashMap<String, String>,
}

impl Settings {
    /// A resolver over a user_config.db (if any) and an environment snapshot.
    pub fn new(
        user: Option<UserConfig>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Settings {
        Settings {
            user,
            env: env.into_iter().collect(),
        }
    }

    /// A resolver over a user_config.db and this process's environment.
    pub fn from_process_env(user: Option<UserConfig>) -> Settings {
        Settings::new(user, with_env_aliases(std::env::vars()))
    }

    /// The resolver a binary uses: user_config.db from `config_db` (its `--config-db` flag or
    /// `DROID_USER_CONFIG`), else the default place when a database exists there (a binary never
    /// creates one just by reading), and this process's environment.
    pub fn for_binary(config_db: Option<&Path>) -> Result<Settings, Error> {
        let user = match config_db {
            Some(path) => Some(UserConfig::open(path)?),
            None => {
                let path = default_path_from_env();
                match path.is_file() {
                    true => Some(UserConfig::open(&path)?),
                    false => None,
                }
            }
        };
        Ok(Settings::from_process_env(user))
    }

    /// The value of a secret setting (any resolved value is wrapped, so it never prints).
    pub fn secret(&mut self, key: &str, flag: Option<&str>) -> Result<Option<Secret>, Error> {
        Ok(self.resolve(key, flag)?.map(|r| match r.value {
            Value::Secret(secret) => secret,
            Value::Plain(value) => Secret::new(value),
        }))
    }

    /// The value of a plain setting.
    pub fn plain(&mut self, key: &str, flag: Option<&str>) -> Result<Option<String>, Error> {
        Ok(self
            .resolve(key, flag)?
            .map(|r| r.value.expose().to_string()))
    }

    /// The value of `key` (any case: `gemini_api_key` or `GEMINI_API_KEY`). `flag` is what the
    /// command line said, if anything. Empty values count as unset.
    pub fn resolve(&mut self, key: &str, flag: Option<&str>) -> Result<Option<Resolved>, Error> {
        let key = normalize(key);
        let known = KNOWN.iter().find(|(name, _, _)| *name == key);
        let secret_key = known.is_some_and(|(_, secret, _)| *secret);
        let wrap = |value: String, secret: bool| {
            if secret {
                Value::Secret(Secret::new(value))
            } else {
                Value::Plain(value)
            }
        };
        let found = |value: Value, source| Ok(Some(Resolved { value, source }));
        if let Some(flag) = flag.filter(|f| !f.is_empty()) {
            return found(wrap(flag.to_string(), secret_key), Source::Flag);
        }
        if let Some(user) = self.user.as_mut() {
            if user.is_secret(&key)? {
                if let Some(secret) = user.get_secret(&key)? {
                    return found(Value::Secret(secret), Source::UserConfig);
                }
            }
            if let Some(setting) = user.get(&key)?.filter(|s| !s.value.is_empty()) {
                return found(wrap(setting.value, secret_key), Source::UserConfig);
            }
        }
        if let Some(value) = self.env.get(&env_name(&key)).filter(|v| !v.is_empty()) {
            return found(wrap(value.clone(), secret_key), Source::Environment);
        }
        if let Some(default) = known.and_then(|(_, _, default)| *default) {
            return found(wrap(default.to_string(), secret_key), Source::Default);
        }
        Ok(None)
    }
}

/// `config set|get|list|unset|secret`: the settings and secrets in user_config.db, for
/// droid-crawl and droid-record alike.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum ConfigCommand {
    /// Store a setting, or with --secret an encrypted secret (value from stdin when omitted).
    Set {
        key: String,
        value: Option<String>,
        #[arg(long)]
        secret: bool,
        /// string, int, float, bool or json.
        #[arg(long = "type", default_value = "string", value_parser = value_type_arg)]
        value_type: ValueType,
    },
    /// Store an encrypted secret, its value read from stdin (never from the command line,
    /// which other users can read in `ps`).
    Secret { name: String },
    /// Print a setting; secrets print as <redacted> unless --reveal.
    Get {
        key: String,
        #[arg(long)]
        reveal: bool,
    },
    /// Remove a setting or secret.
    Unset { key: String },
    /// List settings and secrets (secrets without values).
    List,
}

fn value_type_arg(name: &str) -> Result<ValueType, String> {
    ValueType::parse(name).ok_or_else(|| "expected string, int, float, bool or json".to_string())
}

/// What a config command has to say: lines for stdout, and a message for people when a key
/// was not there (the command then fails).
#[derive(Debug, Default, PartialEq)]
pub struct ConfigOutput {
    pub lines: Vec<String>,
    pub missing: Option<String>,
}

impl ConfigCommand {
    /// Runs the command on `user`; values not given on the command line come from `input`.
    pub fn run(
        self,
        user: &mut UserConfig,
        input: impl std::io::BufRead,
    ) -> Result<ConfigOutput, Error> {
        let mut output = ConfigOutput::default();
        match self {
            ConfigCommand::Set {
                key,
                value,
                secret,
                value_type,
            } => {
                let value = match value {
                    Some(value) => value,
                    None => read_value(input).map_err(Error::Value)?,
                };
                match secret {
                    true => user.set_secret(&key, &Secret::new(value))?,
                    false => user.set(&key, &value, value_type)?,
                }
            }
            ConfigCommand::Secret { name } => {
                let value = read_value(input).map_err(Error::Value)?;
                user.set_secret(&name, &Secret::new(value))?
            }
            ConfigCommand::Get { key, reveal } => match user.show(&key, reveal)? {
                Some(value) => output.lines.push(value),
                None => output.missing = Some(format!("{key} is not set")),
            },
            ConfigCommand::Unset { key } => {
                if !user.unset(&key)? {
                    output.missing = Some(format!("{key} was not set"));
                }
            }
            ConfigCommand::List => {
                output.lines = user.list()?.iter().map(ToString::to_string).collect()
            }
        }
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &Path, machine: &str) -> UserConfig {
        UserConfig::open_bound_to(&dir.join("user_config.db"), Secret::new(machine)).unwrap()
    }

    #[test]
    fn a_value_from_stdin_is_its_first_line_without_the_line_ending() {
        let read = |text: &str| read_value(text.as_bytes()).unwrap();
        assert_eq!(read("sk-123\r\nsecond line\n"), "sk-123");
        assert_eq!(read("  spaced key  \n"), "  spaced key  ");
        assert_eq!(read("no newline"), "no newline");
        for nothing in ["", "\n", "\r\nsecond line\n"] {
            let err = read_value(nothing.as_bytes()).unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{nothing:?}");
            assert!(err.to_string().contains("no value on standard input"));
        }
    }

    #[test]
    fn old_environment_names_stand_in_for_the_canonical_ones() {
        let env = |pairs: &[(&str, &str)]| {
            with_env_aliases(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
        };
        let aliased = env(&[("DROID_TEST_PASSWORD", "old")]);
        assert_eq!(
            aliased.get("TEST_PASSWORD").map(String::as_str),
            Some("old")
        );
        let both = env(&[("DROID_TEST_PASSWORD", "old"), ("TEST_PASSWORD", "new")]);
        assert_eq!(both.get("TEST_PASSWORD").map(String::as_str), Some("new"));
    }

    #[test]
    fn secrets_never_print_in_clear() {
        let secret = Secret::new("sk-live-123");
        assert_eq!(format!("{secret}"), "<redacted>");
        assert!(!format!("{secret:?}").contains("sk-live"));
        let resolved = Resolved {
            value: Value::Secret(secret),
            source: Source::Flag,
        };
        assert!(!format!("{resolved:?}").contains("sk-live"));
    }

    #[test]
    fn secrets_round_trip_and_are_bound_to_the_machine() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = open(dir.path(), "machine-a");
        config
            .set_secret("GEMINI_API_KEY", &Secret::new("sk-abc"))
            .unwrap();
        assert_eq!(
            config.get_secret("gemini_api_key").unwrap(),
            Some(Secret::new("sk-abc"))
        );
        drop(config);
        let mut elsewhere = open(dir.path(), "machine-b");
        assert!(matches!(
            elsewhere.get_secret("gemini_api_key"),
            Err(Error::Decrypt { .. })
        ));
    }

    #[test]
    fn a_ciphertext_moved_to_another_key_does_not_decrypt() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = open(dir.path(), "m");
        config.set_secret("a", &Secret::new("one")).unwrap();
        config
            .conn
            .execute(
                "INSERT INTO secrets SELECT 'b', encrypted_value, updated_at FROM secrets WHERE key = 'a'",
                [],
            )
            .unwrap();
        assert!(matches!(config.get_secret("b"), Err(Error::Decrypt { .. })));
    }

    #[test]
    fn settings_are_typed() {
        let dir = tempfile::tempdir().unwrap();
        let config = open(dir.path(), "m");
        config.set("max_steps", "50", ValueType::Int).unwrap();
        assert!(matches!(
            config.set("max_steps", "fifty", ValueType::Int),
            Err(Error::BadValue { .. })
        ));
        let setting = config.get("MAX_STEPS").unwrap().unwrap();
        assert_eq!(
            (setting.value.as_str(), setting.value_type),
            ("50", ValueType::Int)
        );
        assert!(config.unset("max_steps").unwrap());
        assert!(!config.unset("max_steps").unwrap());
    }

    #[test]
    fn precedence_is_flag_then_user_config_then_environment_then_default() {
        let dir = tempfile::tempdir().unwrap();
        let env = || {
            vec![
                ("OLLAMA_BASE_URL".to_string(), "http://env:1".to_string()),
                ("OPENAI_API_KEY".to_string(), "sk-env".to_string()),
            ]
        };
        let mut bare = Settings::new(None, Vec::new());
        let default = bare.resolve("ollama_base_url", None).unwrap().unwrap();
        assert_eq!(default.source, Source::Default);
        assert_eq!(default.value.expose(), "http://localhost:11434");
        assert_eq!(bare.resolve("openai_base_url", None).unwrap(), None);

        let mut from_env = Settings::new(None, env());
        let env_value = from_env.resolve("OLLAMA_BASE_URL", None).unwrap().unwrap();
        assert_eq!(
            (env_value.value.expose(), env_value.source),
            ("http://env:1", Source::Environment)
        );
        let key = from_env.resolve("openai_api_key", None).unwrap().unwrap();
        assert!(matches!(key.value, Value::Secret(_)));

        let mut config = open(dir.path(), "m");
        config
            .set("ollama_base_url", "http://db:2", ValueType::String)
            .unwrap();
        config
            .set_secret("openai_api_key", &Secret::new("sk-db"))
            .unwrap();
        let mut full = Settings::new(Some(config), env());
        let db_value = full.resolve("ollama_base_url", None).unwrap().unwrap();
        assert_eq!(
            (db_value.value.expose(), db_value.source),
            ("http://db:2", Source::UserConfig)
        );
        let db_key = full.resolve("OPENAI_API_KEY", None).unwrap().unwrap();
        assert_eq!(
            (db_key.value.expose(), db_key.source),
            ("sk-db", Source::UserConfig)
        );
        let flagged = full
            .resolve("ollama_base_url", Some("http://flag:3"))
            .unwrap()
            .unwrap();
        assert_eq!(
            (flagged.value.expose(), flagged.source),
            ("http://flag:3", Source::Flag)
        );
    }

    #[test]
    fn default_path_prefers_xdg() {
        assert_eq!(
            default_path(Some("/x"), Some("/h")),
            PathBuf::from("/x/droid/user_config.db")
        );
        assert_eq!(
            default_path(None, Some("/h")),
            PathBuf::from("/h/.config/droid/user_config.db")
        );
    }
}
