//! The device-selection flags every binary that talks to a device shares (DESIGN section 10).

use std::time::Duration;

use super::{DeviceConfig, ScreenshotMode};
use crate::adb::{AdbError, ServerConfig};

/// `--device`, `--adb-port`, `--adb-host`, `--adb-timeout`, `--wait-for-device`; flatten into a
/// binary's arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct DeviceArgs {
    /// Device serial [default: the only device attached]
    #[arg(long, short = 's', env = "ANDROID_SERIAL", value_name = "SERIAL")]
    pub device: Option<String>,
    /// ADB server port [default: 5037, or the port of ADB_SERVER_SOCKET=tcp:HOST:PORT]
    #[arg(long, env = "ANDROID_ADB_SERVER_PORT", value_name = "PORT")]
    pub adb_port: Option<u16>,
    /// ADB server host [default: localhost, or the host of ADB_SERVER_SOCKET]
    #[arg(long, value_name = "HOST")]
    pub adb_host: Option<String>,
    /// Seconds one device command may take before it fails
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    pub adb_timeout: f64,
    /// Seconds to wait for a device that went away (unplugged, rebooting, offline) to come back
    /// before a command fails, as `adb wait-for-device` does; 0 fails at once
    #[arg(
        long,
        env = "DROID_WAIT_FOR_DEVICE",
        default_value_t = 30.0,
        value_name = "SECS"
    )]
    pub wait_for_device: f64,
}

impl DeviceArgs {
    /// The device configuration; `env` looks up `ADB_SERVER_SOCKET` (clap covers the rest).
    pub fn to_config(
        &self,
        screenshot: ScreenshotMode,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<DeviceConfig, AdbError> {
        let mut server = ServerConfig::resolve(self.adb_host.as_deref(), self.adb_port, env)?;
        self.apply_waits(&mut server);
        Ok(DeviceConfig {
            server,
            serial: self.device.clone().filter(|s| !s.is_empty()),
            screenshot,
            ..DeviceConfig::default()
        })
    }

    /// `--adb-timeout` and `--wait-for-device` on a server chosen elsewhere (droid-crawl's
    /// own simulator).
    pub fn apply_waits(&self, server: &mut ServerConfig) {
        if self.adb_timeout.is_finite() && self.adb_timeout > 0.0 {
            server.timeout = Duration::from_secs_f64(self.adb_timeout);
        }
        if self.wait_for_device.is_finite() && self.wait_for_device >= 0.0 {
            server.wait_for_device = Duration::from_secs_f64(self.wait_for_device);
        }
    }
}
