//! Faults a tester can inject (`--fault SPEC`) and the latency model (`--latency`).
//!
//! Faults are deterministic: `dump-error` draws from a fixed-seed generator, so the same run of
//! commands fails at the same dumps every time.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use thiserror::Error;

/// A `--fault` or `--latency` value that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FaultError {
    #[error("unknown fault {0:?} (known: disconnect-after:N[:SECS], dump-error:RATE, slow:MS, anr-on:SCREEN, crash-every:N)")]
    Unknown(String),
    #[error("fault {spec:?}: {reason}")]
    BadValue { spec: String, reason: String },
    #[error("unknown latency model {0:?} (known: none, realistic)")]
    Latency(String),
}

/// How long the outage of `disconnect-after:N` lasts when no duration is given.
pub const DEFAULT_OUTAGE: Duration = Duration::from_secs(2);

/// One `--fault` spec.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// After every N device commands, drop every socket and report the device gone for a while.
    DisconnectAfter { commands: u64, outage: Duration },
    /// `uiautomator dump` fails with the real idle-state error at this rate (0..=1).
    DumpError { rate: f64 },
    /// Every device command takes this much longer.
    Slow(Duration),
    /// The app stops responding (ANR dialog) when this screen is shown.
    AnrOn(String),
    /// A flaky crash: the model's crash transitions fire on their 1st, (N+1)th, (2N+1)th...
    /// attempt (counted over the device's life, across launches); the others do nothing.
    CrashEvery(u32),
}

impl FromStr for Fault {
    type Err = FaultError;

    fn from_str(spec: &str) -> Result<Fault, FaultError> {
        let bad = |reason: &str| FaultError::BadValue {
            spec: spec.to_string(),
            reason: reason.to_string(),
        };
        let (name, value) = spec
            .split_once(':')
            .ok_or_else(|| FaultError::Unknown(spec.to_string()))?;
        match name {
            "disconnect-after" => {
                let (count, secs) = match value.split_once(':') {
                    Some((count, secs)) => (count, Some(secs)),
                    None => (value, None),
                };
                let commands: u64 = count
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| bad("N must be a whole number of commands above 0"))?;
                let outage = match secs {
                    None => DEFAULT_OUTAGE,
                    Some(secs) => secs
                        .parse::<f64>()
                        .ok()
                        .filter(|s| s.is_finite() && *s >= 0.0 && *s <= 3600.0)
                        .map(Duration::from_secs_f64)
                        .ok_or_else(|| bad("SECS must be a number of seconds from 0 to 3600"))?,
                };
                Ok(Fault::DisconnectAfter { commands, outage })
            }
            "dump-error" => {
                let rate: f64 = value
                    .parse()
                    .ok()
                    .filter(|r: &f64| (0.0..=1.0).contains(r))
                    .ok_or_else(|| bad("RATE must be a number from 0 to 1"))?;
                Ok(Fault::DumpError { rate })
            }
            "slow" => {
                let ms: u64 = value
                    .parse()
                    .ok()
                    .filter(|ms| *ms <= 600_000)
                    .ok_or_else(|| bad("MS must be milliseconds from 0 to 600000"))?;
                Ok(Fault::Slow(Duration::from_millis(ms)))
            }
            "anr-on" if !value.is_empty() => Ok(Fault::AnrOn(value.to_string())),
            "crash-every" => value
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .map(Fault::CrashEvery)
                .ok_or_else(|| bad("N must be a whole number of attempts above 0")),
            "anr-on" => Err(bad("SCREEN must name a screen of the model")),
            _ => Err(FaultError::Unknown(spec.to_string())),
        }
    }
}

/// Per-command delays, so benchmarks can show what concurrency saves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Latency {
    /// Every command answers at once.
    #[default]
    None,
    /// Delays measured on real devices, roughly: dump 1.2 s, PNG screencap 0.6 s, raw screencap
    /// 0.15 s, input 0.1 s, anything else 0.02 s.
    Realistic,
}

impl FromStr for Latency {
    type Err = FaultError;

    fn from_str(name: &str) -> Result<Latency, FaultError> {
        match name {
            "none" => Ok(Latency::None),
            "realistic" => Ok(Latency::Realistic),
            other => Err(FaultError::Latency(other.to_string())),
        }
    }
}

impl Latency {
    /// How long the device takes for one command (by its argv).
    pub fn delay(self, argv: &[String]) -> Duration {
        if self == Latency::None {
            return Duration::ZERO;
        }
        let arg = |i: usize| argv.get(i).map_or("", String::as_str);
        let ms = match arg(0) {
            "uiautomator" if arg(1) == "dump" => 1200,
            "screencap" => {
                let png = argv
                    .iter()
                    .skip(1)
                    .any(|a| a == "-p" || a.ends_with(".png"));
                if png {
                    600
                } else {
                    150
                }
            }
            "input" => 100,
            _ => 20,
        };
        Duration::from_millis(ms)
    }
}

/// The faults of one simulator, with their running state. Shared by every connection.
#[derive(Debug)]
pub struct Faults {
    disconnect: Option<(u64, Duration)>,
    dump_error_rate: f64,
    slow: Duration,
    anr_screen: Option<String>,
    crash_every: Option<u32>,
    commands: AtomicU64,
    offline_until: Mutex<Option<Instant>>,
    rng: Mutex<ChaCha8Rng>,
}

/// What the fault layer says about a device command about to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Run,
    /// This command is the one after N: drop every connection now.
    Disconnect,
}

impl Faults {
    /// Later specs of the same kind replace earlier ones.
    pub fn new(specs: &[Fault]) -> Faults {
        let mut faults = Faults {
            disconnect: None,
            dump_error_rate: 0.0,
            slow: Duration::ZERO,
            anr_screen: None,
            crash_every: None,
            commands: AtomicU64::new(0),
            offline_until: Mutex::new(None),
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(0x0D201D)),
        };
        for spec in specs {
            match spec {
                Fault::DisconnectAfter { commands, outage } => {
                    faults.disconnect = Some((*commands, *outage));
                }
                Fault::DumpError { rate } => faults.dump_error_rate = *rate,
                Fault::Slow(extra) => faults.slow = *extra,
                Fault::AnrOn(screen) => faults.anr_screen = Some(screen.clone()),
                Fault::CrashEvery(n) => faults.crash_every = Some(*n),
            }
        }
        faults
    }

    /// The screen of `anr-on`, for the world.
    pub fn anr_screen(&self) -> Option<String> {
        self.anr_screen.clone()
    }

    /// `crash-every:N`'s N, for the world.
    pub fn crash_every(&self) -> Option<u32> {
        self.crash_every
    }

    /// Extra time every device command takes (`slow:MS`).
    pub fn slow(&self) -> Duration {
        self.slow
    }

    /// True while a `disconnect-after` outage lasts: the device is not attached.
    pub fn offline(&self) -> bool {
        let mut until = self
            .offline_until
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match *until {
            Some(end) if Instant::now() < end => true,
            Some(_) => {
                *until = None;
                false
            }
            None => false,
        }
    }

    /// Counts one device command (shell, exec, sync session). The (N+1)th command after the
    /// last outage starts a new outage instead of running.
    pub fn admit(&self) -> Admission {
        let Some((every, outage)) = self.disconnect else {
            return Admission::Run;
        };
        let count = self.commands.fetch_add(1, Ordering::SeqCst) + 1;
        if count <= every {
            return Admission::Run;
        }
        self.commands.store(0, Ordering::SeqCst);
        *self
            .offline_until
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(Instant::now() + outage);
        Admission::Disconnect
    }

    /// Whether this `uiautomator dump` fails with the idle-state error.
    pub fn dump_fails(&self) -> bool {
        if self.dump_error_rate <= 0.0 {
            return false;
        }
        let mut rng = self
            .rng
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        rng.gen::<f64>() < self.dump_error_rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_explain_themselves() {
        assert_eq!(
            "disconnect-after:5".parse(),
            Ok(Fault::DisconnectAfter {
                commands: 5,
                outage: DEFAULT_OUTAGE
            })
        );
        assert_eq!(
            "disconnect-after:5:0.5".parse(),
            Ok(Fault::DisconnectAfter {
                commands: 5,
                outage: Duration::from_millis(500)
            })
        );
        assert_eq!(
            "dump-error:0.25".parse(),
            Ok(Fault::DumpError { rate: 0.25 })
        );
        assert_eq!(
            "slow:300".parse(),
            Ok(Fault::Slow(Duration::from_millis(300)))
        );
        assert_eq!("anr-on:cart".parse(), Ok(Fault::AnrOn("cart".into())));
        assert_eq!("crash-every:2".parse(), Ok(Fault::CrashEvery(2)));
        for bad in [
            "dump-error:2",
            "disconnect-after:0",
            "slow:x",
            "anr-on:",
            "crash-every:0",
            "nope:1",
            "slow",
        ] {
            assert!(bad.parse::<Fault>().is_err(), "{bad}");
        }
        let message = "dump-error:1.5".parse::<Fault>().unwrap_err().to_string();
        assert!(message.contains("RATE"), "{message}");
    }

    #[test]
    fn disconnect_fires_after_n_commands_then_counts_again() {
        let faults = Faults::new(&[Fault::DisconnectAfter {
            commands: 2,
            outage: Duration::ZERO,
        }]);
        let seen: Vec<Admission> = (0..6).map(|_| faults.admit()).collect();
        use Admission::*;
        assert_eq!(seen, vec![Run, Run, Disconnect, Run, Run, Disconnect]);
        assert!(!faults.offline(), "a zero outage is over at once");
    }

    #[test]
    fn dump_errors_follow_the_rate_deterministically() {
        let draw = || {
            let faults = Faults::new(&[Fault::DumpError { rate: 0.3 }]);
            (0..1000)
                .map(|_| faults.dump_fails())
                .collect::<Vec<bool>>()
        };
        let first = draw();
        assert_eq!(first, draw());
        let failures = first.iter().filter(|f| **f).count();
        assert!((220..380).contains(&failures), "{failures}");
        let never = Faults::new(&[]);
        assert!((0..100).all(|_| !never.dump_fails()));
    }

    #[test]
    fn realistic_latency_is_per_command() {
        let argv = |line: &str| line.split(' ').map(String::from).collect::<Vec<_>>();
        let r = Latency::Realistic;
        assert_eq!(
            r.delay(&argv("uiautomator dump /sdcard/x.xml")).as_millis(),
            1200
        );
        assert_eq!(r.delay(&argv("screencap -p")).as_millis(), 600);
        assert_eq!(r.delay(&argv("screencap /sdcard/s.png")).as_millis(), 600);
        assert_eq!(r.delay(&argv("screencap")).as_millis(), 150);
        assert_eq!(r.delay(&argv("input tap 1 2")).as_millis(), 100);
        assert_eq!(
            Latency::None.delay(&argv("uiautomator dump")),
            Duration::ZERO
        );
        assert!("fast".parse::<Latency>().is_err());
    }
}
