//! PCAPdroid's control activity, when the model installs that app: the phone hosts it, and its
//! `CaptureCtrl` starts and stops the capture (see [`crate::sim::pcapdroid`]).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use super::{guard, Phone, Process};
use crate::sim::pcapdroid::{self, PCAPDROID_PACKAGE};
use crate::sim::shell::{lock, FsError, FsHandle};

impl Phone {
    /// The PCAPdroid `CaptureCtrl` activity: `-e action start|stop|get_status`, pcap_file mode.
    /// A request without the API key the model sets waits for a consent nobody gives.
    pub(super) fn pcapdroid(
        &self,
        extras: &BTreeMap<String, String>,
        fs: &FsHandle,
    ) -> Result<(), String> {
        let key = self
            .world()
            .model()
            .pcapdroid()
            .and_then(|p| p.api_key.clone());
        if key.is_some() && extras.get("api_key") != key.as_ref() {
            return Ok(());
        }
        match extras.get("action").map(String::as_str) {
            Some("start") => {
                let name = extras
                    .get("pcap_name")
                    .cloned()
                    .unwrap_or_else(|| "PCAPdroid.pcap".to_string());
                if name.contains('/') {
                    return Err(format!("PCAPdroid: invalid pcap_name {name}\n"));
                }
                let path = format!("{}/{name}", pcapdroid::DIR);
                // A start while capturing ends the running capture first.
                self.end_capture(false).map_err(|e| format!("{e}\n"))?;
                let mut storage = lock(fs);
                storage
                    .mkdir(pcapdroid::DIR, true)
                    .map_err(|e| e.to_string())?;
                storage
                    .write(&path, &pcapdroid::header(), false)
                    .map_err(|e| e.to_string())?;
                drop(storage);
                let app = extras
                    .get("app_filter")
                    .cloned()
                    .unwrap_or_else(|| self.world().foreground().package);
                let pid = self.next_pid.fetch_add(1, Ordering::SeqCst);
                guard(&self.processes).push(Process {
                    pid,
                    argv: vec![PCAPDROID_PACKAGE.to_string()],
                    signal: Arc::new((Mutex::new(None), Condvar::new())),
                });
                *guard(&self.capture) = Some(pcapdroid::Capture {
                    pid,
                    started: Instant::now(),
                    path,
                    app,
                });
                Ok(())
            }
            Some("stop") => self.end_capture(false).map_err(|e| format!("{e}\n")),
            Some("get_status") => Ok(()),
            _ => Err("PCAPdroid: missing or unknown action\n".to_string()),
        }
    }

    /// Ends the running capture, if any: stopped, its file complete; or its process killed,
    /// the file as far as it got.
    pub(super) fn end_capture(&self, killed: bool) -> Result<(), FsError> {
        let Some(capture) = guard(&self.capture).take() else {
            return Ok(());
        };
        guard(&self.processes).retain(|p| p.pid != capture.pid);
        let file = if killed {
            capture.file_when_killed()
        } else {
            capture.file()
        };
        lock(&self.fs).write(&capture.path, &file, false)
    }
}
