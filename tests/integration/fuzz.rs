//! A seeded mutation fuzzer over droid's parsers, on stable Rust: real inputs from
//! `../shared/fixtures` (uiautomator dumps, provider answers), event lines of a real run, and ADB
//! requests to an in-process droid-sim, mutated by a ChaCha generator from a seed.
//!
//! Every input must give a value or a typed error: a panic is a crash, an input that takes more
//! than [`HANG`] is a hang. Under `make test` a short slice runs (seed 0, [`DEFAULT_INPUTS`]
//! inputs); `make fuzz` runs it for `DROID_FUZZ_SECONDS` (default 60) from `DROID_FUZZ_SEED`
//! (default: the clock) and prints what it ran and found. A finding names its target, seed and
//! input number, so `DROID_FUZZ_SEED=S` reproduces it; the input is saved under
//! `target/fuzz-findings/`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use droid::decide::prompt::Scale;
use droid::events::{Event, Observation};
use droid::sim::{Sim, SimConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::common::{fixtures, root};

/// Inputs of the slice `make test` runs.
const DEFAULT_INPUTS: u64 = 3_000;
/// An input that takes longer than this is a hang (`make fuzz` builds with optimisations; the
/// unoptimised slice of `make test` gets ten times as long, so a loaded machine cannot fail it).
const HANG: Duration = if cfg!(debug_assertions) {
    Duration::from_secs(10)
} else {
    Duration::from_secs(1)
};
/// Largest mutated input, so one input stays cheap.
const MAX_INPUT: usize = 256 * 1024;

/// Fragments that reach the corners of the formats: nesting, entities, escapes, numbers at the
/// edges, separators.
const TOKENS: &[&str] = &[
    "<node>",
    "</node>",
    "<node/>",
    "<hierarchy>",
    "</hierarchy>",
    "<!--",
    "-->",
    "<![CDATA[",
    "]]>",
    "<?xml version='1.0'?>",
    "<!DOCTYPE h [<!ENTITY e \"x\">]>",
    "&amp;",
    "&#10;",
    "&#x1F600;",
    "&e;",
    "\"",
    "'",
    "=",
    " bounds=\"[0,0][1,1]\"",
    "[-2147483648,0][99999999999,1]",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"v\":1",
    "\"type\":\"observation\"",
    "\"run_id\":\"../x\"",
    "\"step\":18446744073709551615",
    "\"duration_ms\":18446744073709551615",
    "null",
    "1e999",
    "-0",
    "\\u0000",
    "\\ud800",
    "\u{0}",
    "\u{feff}",
    "\n",
    "```json",
    "```",
    "//",
    "/*",
    "*/",
    "NaN",
    "Infinity",
    "0000",
    "ffff",
    "host:",
    "shell,v2,raw:",
    "sync:",
    "exec:",
    ";",
    "$(",
];

/// A run of the fuzzer: where it is, what it found.
struct Fuzz {
    rng: ChaCha8Rng,
    seed: u64,
    executions: u64,
    slowest: (Duration, String),
    findings: Vec<String>,
}

impl Fuzz {
    /// Runs `target` on `input`, recording a panic or a hang as a finding.
    fn run(&mut self, name: &str, input: &[u8], target: &dyn Fn(&[u8])) {
        let n = self.executions;
        self.executions += 1;
        let started = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| target(input)));
        let took = started.elapsed();
        if took > self.slowest.0 {
            self.slowest = (took, format!("{name} #{n} ({} bytes)", input.len()));
        }
        let finding = match outcome {
            Err(panic) => Some(format!("{name}: panic: {}", panic_text(&panic))),
            Ok(()) if took > HANG => Some(format!("{name}: hang: {took:?}")),
            Ok(()) => None,
        };
        if let Some(finding) = finding {
            let dir = root().join("target/fuzz-findings");
            let _ = std::fs::create_dir_all(&dir);
            let file = dir.join(format!("{name}-seed{}-{n}", self.seed));
            let _ = std::fs::write(&file, input);
            self.findings.push(format!(
                "{finding} (seed {}, input {n}, saved as {})",
                self.seed,
                file.display()
            ));
        }
    }

    /// One mutant of `base`: one to eight mutations, some taking material from `other`.
    fn mutate(&mut self, base: &[u8], other: &[u8]) -> Vec<u8> {
        let mut data = base.to_vec();
        for _ in 0..self.rng.gen_range(1..=8) {
            let len = data.len();
            let at = if len == 0 {
                0
            } else {
                self.rng.gen_range(0..=len)
            };
            match self.rng.gen_range(0..9) {
                0 if len > 0 => {
                    let i = self.rng.gen_range(0..len);
                    data[i] ^= 1 << self.rng.gen_range(0..8);
                }
                1 if len > 0 => {
                    let i = self.rng.gen_range(0..len);
                    data[i] = self.rng.gen();
                }
                2 => {
                    let token = TOKENS[self.rng.gen_range(0..TOKENS.len())];
                    data.splice(at..at, token.bytes());
                }
                3 if at < len => {
                    let end = self.rng.gen_range(at..=len.min(at + 64));
                    data.drain(at..end);
                }
                4 if at < len => {
                    // A chunk repeated: deep nesting, long lists, long values.
                    let end = self.rng.gen_range(at..=len.min(at + 32));
                    let chunk = data[at..end].to_vec();
                    let times = 1 << self.rng.gen_range(1..12);
                    for _ in 0..times {
                        data.splice(end..end, chunk.iter().copied());
                        if data.len() > MAX_INPUT {
                            break;
                        }
                    }
                }
                5 if !other.is_empty() => {
                    let from = self.rng.gen_range(0..other.len());
                    let end = self.rng.gen_range(from..=other.len().min(from + 256));
                    data.splice(at..at, other[from..end].iter().copied());
                }
                6 => data.truncate(at),
                7 => {
                    let number = [
                        "0",
                        "-1",
                        "2147483648",
                        "-9223372036854775809",
                        "18446744073709551616",
                        "1.5",
                    ][self.rng.gen_range(0..6)];
                    data.splice(at..at, number.bytes());
                }
                _ => {
                    let noise: Vec<u8> = (0..self.rng.gen_range(1..16))
                        .map(|_| self.rng.gen())
                        .collect();
                    data.splice(at..at, noise);
                }
            }
            data.truncate(MAX_INPUT);
        }
        data
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

fn read_dir_files(dir: PathBuf, extensions: &[&str]) -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
        .into_iter()
        .filter(|p| {
            p.extension()
                .is_some_and(|x| extensions.iter().any(|e| x == *e))
        })
        .filter_map(|p| std::fs::read(p).ok())
        .collect()
}

/// The real dumps: the device fixtures and the notes app's screens.
fn dumps() -> Vec<Vec<u8>> {
    let mut dumps = read_dir_files(fixtures().join("uidump"), &["xml"]);
    dumps.extend(read_dir_files(
        fixtures().join("apps/notes/screens"),
        &["xml"],
    ));
    dumps
}

/// Provider answers and request bodies as models and servers wrote them.
fn provider_answers() -> Vec<Vec<u8>> {
    let mut answers = Vec::new();
    for folder in ["ollama", "gemini", "openrouter", "openai_compat"] {
        answers.extend(read_dir_files(
            fixtures().join("providers").join(folder),
            &["json", "txt"],
        ));
    }
    answers
}

/// Event lines of a real run: an observation of a real dump, a decision, results, a note and
/// the run's start and end, as the stages write them.
fn event_lines(dumps: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let xml = String::from_utf8_lossy(&dumps[0]);
    let mut elements = droid::ui::parse(&xml).expect("a fixture dump parses");
    let tree = droid::ui::prune(&mut elements);
    let observation = Observation {
        run_id: Some("fuzz-run".into()),
        step: Some(1),
        elements,
        tree: Some(tree),
        xml: Some(xml.chars().take(2000).collect()),
        ..Observation::default()
    };
    let mut lines = vec![Event::Observation(Box::new(observation)).to_line()];
    lines.extend(
        [
            r#"{"type":"run_started","v":1,"run_id":"r-1","device":"emulator-5554","package":"com.x","decider":"heuristic","session_dir":"/tmp/x"}"#,
            r#"{"type":"decision","v":1,"run_id":"r-1","step":1,"actions":[{"action":"click","target_bounding_box":{"top_left":[1,2],"bottom_right":[30,40]},"ref":3},{"action":"wait","duration_ms":500}]}"#,
            r#"{"type":"result","v":1,"run_id":"r-1","step":1,"index":0,"action_type":"click","success":true,"duration_ms":112,"navigated_away":false,"tap_point":[903,259],"origin":"xml"}"#,
            r#"{"type":"note","v":1,"run_id":"r-1","step":1,"kind":"warning","message":"m"}"#,
            r#"{"type":"run_ended","v":1,"run_id":"r-1","status":"COMPLETED","reason":"max_steps","steps":1}"#,
        ]
        .map(String::from),
    );
    lines.into_iter().map(String::into_bytes).collect()
}

/// ADB requests a client sends (each framed with its 4-hex-digit length when sent).
fn adb_requests() -> Vec<Vec<u8>> {
    [
        "host:version",
        "host:devices-l",
        "host-serial:emulator-5554:features",
        "host:tport:serial:emulator-5554",
        "host:transport:emulator-5554",
        "shell,v2,raw:echo hi",
        "exec:screencap -p",
        "shell:getprop ro.build.version.sdk",
        "sync:",
    ]
    .iter()
    .map(|r| format!("{:04x}{r}", r.len()).into_bytes())
    .collect()
}

fn parse_dump(input: &[u8]) {
    let xml = String::from_utf8_lossy(input);
    if let Ok(mut elements) = droid::ui::parse(&xml) {
        droid::ui::prune(&mut elements);
    }
    let _ = droid::hash::layout_hash(&xml);
    let _ = droid::hash::structure_hash(&xml);
}

fn parse_event(input: &[u8]) {
    let line = String::from_utf8_lossy(input);
    if let Ok(Some(event)) = Event::from_line(&line) {
        // What a stage does with a decoded event: write it back and read it again.
        let again = Event::from_line(&event.to_line());
        assert!(again.is_ok(), "a written event reads back: {again:?}");
    }
    // The reader over a stream of such lines.
    let stream = [input, b"\n", input].concat();
    for line in droid::events::EventReader::new(&stream[..]) {
        let _ = line;
    }
}

fn parse_answer(input: &[u8], observation: &Observation) {
    let text = String::from_utf8_lossy(input);
    let _ = droid::decide::response::parse(&text, observation, Scale::IDENTITY, 12);
}

/// Sends one (mutated) request to the simulator and reads what comes back, then checks that it
/// still answers a well-formed one.
fn ask_sim(port: u16, input: &[u8]) {
    if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) {
        let _ = stream.set_read_timeout(Some(Duration::from_millis(300)));
        let _ = stream.write_all(input);
        let _ = stream.shutdown(std::net::Shutdown::Write);
        let mut sink = Vec::new();
        let _ = stream.take(1 << 20).read_to_end(&mut sink);
    }
    let mut probe = TcpStream::connect(("127.0.0.1", port)).expect("the simulator still listens");
    probe
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    probe.write_all(b"000chost:version").unwrap();
    let mut status = [0u8; 4];
    probe.read_exact(&mut status).expect("an answer");
    assert_eq!(&status, b"OKAY", "the simulator still serves");
}

#[test]
fn parsers_survive_mutated_real_inputs() {
    droid::fixtures_or_skip!();
    let seconds: Option<u64> = std::env::var("DROID_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok());
    let seed: u64 = std::env::var("DROID_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| match seconds {
            Some(_) => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            None => 0,
        });
    let until = seconds.map(|s| Instant::now() + Duration::from_secs(s));
    let dumps = dumps();
    let answers = provider_answers();
    let events = event_lines(&dumps);
    let requests = adb_requests();
    let observation = match Event::from_line(&String::from_utf8_lossy(&events[0])) {
        Ok(Some(Event::Observation(o))) => *o,
        other => panic!("the seed observation reads back: {other:?}"),
    };
    let sim = Sim::start(SimConfig::new("builtin:tiny")).expect("simulator starts");
    let port = sim.port();
    // Seeds run as they are first, so the corpus itself is checked.
    let mut fuzz = Fuzz {
        rng: ChaCha8Rng::seed_from_u64(seed),
        seed,
        executions: 0,
        slowest: (Duration::ZERO, String::new()),
        findings: Vec::new(),
    };
    let targets: [(&str, &[Vec<u8>]); 4] = [
        ("dump", &dumps),
        ("event", &events),
        ("answer", &answers),
        ("adb", &requests),
    ];
    let mut counts = [0u64; 4];
    let done = |fuzz: &Fuzz| match until {
        Some(until) => Instant::now() >= until,
        None => fuzz.executions >= DEFAULT_INPUTS,
    };
    while !done(&fuzz) {
        // Cheap parsers get most inputs: dumps cost about 100x an event line.
        let pick = match fuzz.rng.gen_range(0..100) {
            0..=9 => 0,
            10..=64 => 1,
            65..=97 => 2,
            _ => 3,
        };
        let (name, corpus) = targets[pick];
        let base = &corpus[fuzz.rng.gen_range(0..corpus.len())];
        let other = &corpus[fuzz.rng.gen_range(0..corpus.len())];
        let input = if fuzz.executions < 40 {
            base.clone()
        } else {
            fuzz.mutate(base, other)
        };
        counts[pick] += 1;
        match pick {
            0 => fuzz.run(name, &input, &parse_dump),
            1 => fuzz.run(name, &input, &parse_event),
            2 => fuzz.run(name, &input, &|i| parse_answer(i, &observation)),
            _ => fuzz.run(name, &input, &|i| ask_sim(port, i)),
        }
    }
    eprintln!(
        "fuzz: seed {seed}: {} inputs (dump {}, event {}, answer {}, adb {}), {} findings; \
         slowest {:?} ({})",
        fuzz.executions,
        counts[0],
        counts[1],
        counts[2],
        counts[3],
        fuzz.findings.len(),
        fuzz.slowest.0,
        fuzz.slowest.1
    );
    assert!(fuzz.findings.is_empty(), "{}", fuzz.findings.join("\n"));
}
