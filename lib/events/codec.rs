//! The line codec: an event to and from one line of JSON, and the reader and writer of the
//! stream, which bound what they hold and name the line of every error.

use std::io::{self, BufRead, Write};

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{
    check_run_id, ActionResult, Decision, Event, Extra, Note, Observation, RunEnded, RunStarted,
    RUN_END_STATUSES, WIRE_VERSION,
};

/// Longest line a reader accepts (an observation with its raw XML can be large, but not this).
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

impl Event {
    /// The event as a JSON object with `type` and `v` first.
    pub fn to_value(&self) -> Value {
        let body = match self {
            Event::RunStarted(e) => serde_json::to_value(e),
            Event::RunEnded(e) => serde_json::to_value(e),
            Event::Observation(e) => serde_json::to_value(e),
            Event::Decision(e) => serde_json::to_value(e),
            Event::Result(e) => serde_json::to_value(e),
            Event::Note(e) => serde_json::to_value(e),
        };
        // Our types serialise to objects with string keys; failure would be a bug in one of them.
        let body = body.expect("event types serialise to JSON");
        let mut object = Map::new();
        object.insert("type".into(), Value::from(self.type_name()));
        object.insert("v".into(), Value::from(WIRE_VERSION));
        if let Value::Object(fields) = body {
            for (key, value) in fields {
                if key != "type" && key != "v" {
                    object.insert(key, value);
                }
            }
        }
        Value::Object(object)
    }

    /// The event as one line of JSON, without the newline.
    pub fn to_line(&self) -> String {
        self.to_value().to_string()
    }

    /// Decodes one line. `Ok(None)` for a well-formed line of a type this version does not know.
    pub fn from_line(line: &str) -> Result<Option<Event>, LineError> {
        // Fast path: a valid line of a known type decodes straight into its struct, without an
        // intermediate `Value` tree. Anything else (bad JSON, a bad envelope, wrong fields)
        // takes the `Value` path below, which alone decides what is an error and how it reads.
        if let Some(event) = Event::decode_direct(line) {
            return Ok(Some(event));
        }
        let value: Value =
            serde_json::from_str(line).map_err(|e| LineError::Json(e.to_string()))?;
        Event::from_value(value)
    }

    /// Decodes a line of a known type with `"v": 1` directly; `None` when the line is anything
    /// else or does not decode.
    ///
    /// The type is guessed from the line's start (`{"type":"…"`, as [`Event::to_line`] writes
    /// it) or else read with a small envelope; either way the body decodes with `type` and `v`
    /// in its `extra`, and they are checked there: a duplicate key (last one wins, as in the
    /// `Value` path) cannot make a guess wrong.
    fn decode_direct(line: &str) -> Option<Event> {
        // Only objects: a JSON array would fill the envelope's fields by position.
        if !line.trim_start().starts_with('{') {
            return None;
        }
        let guessed = line
            .strip_prefix("{\"type\":\"")
            .and_then(|rest| rest.split_once('"'))
            .map(|(kind, _)| kind)
            .filter(|kind| !kind.contains('\\'));
        let kind = match guessed {
            Some(kind) => kind,
            None => serde_json::from_str::<Envelope>(line).ok()?.kind?,
        };
        Some(match kind {
            "run_started" => {
                Event::RunStarted(body_of(line, kind, |e: &mut RunStarted| &mut e.extra)?)
            }
            "run_ended" => Event::RunEnded(body_of(line, kind, |e: &mut RunEnded| &mut e.extra)?),
            "observation" => {
                Event::Observation(Box::new(body_of(line, kind, |e: &mut Observation| {
                    &mut e.extra
                })?))
            }
            "decision" => Event::Decision(body_of(line, kind, |e: &mut Decision| &mut e.extra)?),
            "result" => Event::Result(body_of(line, kind, |e: &mut ActionResult| &mut e.extra)?),
            "note" => Event::Note(body_of(line, kind, |e: &mut Note| &mut e.extra)?),
            _ => return None,
        })
    }

    /// Decodes a parsed line; `Ok(None)` for an unknown type.
    pub fn from_value(value: Value) -> Result<Option<Event>, LineError> {
        let Value::Object(mut object) = value else {
            return Err(LineError::NotAnObject);
        };
        // `shift_remove` keeps the order of the remaining (unknown) fields, as written back.
        let kind = match object.shift_remove("type") {
            Some(Value::String(kind)) => kind,
            Some(_) => return Err(LineError::TypeNotString),
            None => return Err(LineError::MissingType),
        };
        match object.shift_remove("v") {
            Some(Value::Number(n)) if n.as_u64() == Some(WIRE_VERSION) => {}
            Some(other) => return Err(LineError::Version(other.to_string())),
            None => return Err(LineError::MissingVersion),
        }
        let body = Value::Object(object);
        let event = match kind.as_str() {
            "run_started" => Event::RunStarted(decode(&kind, body)?),
            "run_ended" => Event::RunEnded(decode(&kind, body)?),
            "observation" => Event::Observation(Box::new(decode(&kind, body)?)),
            "decision" => Event::Decision(decode(&kind, body)?),
            "result" => Event::Result(decode(&kind, body)?),
            "note" => Event::Note(decode(&kind, body)?),
            _ => return Ok(None),
        };
        Ok(Some(event))
    }

    /// The event, when the values serde cannot judge are valid: run ids (see
    /// [`check_run_id`]), a `run_ended` status (one of [`RUN_END_STATUSES`]) and a decision of
    /// 1 to [`Decision::MAX_ACTIONS`] actions. Stages check what they read ([`EventReader`]);
    /// what a store recorded before is read back as it is.
    pub fn checked(self) -> Result<Event, LineError> {
        let invalid = |reason: String| LineError::Fields {
            kind: self.type_name().to_string(),
            reason,
        };
        if let Some(run) = self.run_id() {
            check_run_id(run).map_err(|e| invalid(e.to_string()))?;
        }
        if let Event::RunEnded(ended) = &self {
            if !RUN_END_STATUSES.contains(&ended.status.as_str()) {
                return Err(invalid(format!(
                    "status {:?} is not one of {}",
                    ended.status,
                    RUN_END_STATUSES.join(", ")
                )));
            }
        }
        if let Event::Decision(decision) = &self {
            let count = decision.actions.len();
            if !(1..=Decision::MAX_ACTIONS).contains(&count) {
                return Err(LineError::Fields {
                    kind: "decision".into(),
                    reason: format!(
                        "{count} actions (a decision holds 1 to {})",
                        Decision::MAX_ACTIONS
                    ),
                });
            }
        }
        Ok(self)
    }
}

/// A line's `type`, read without building the rest (other fields are skipped).
#[derive(Deserialize)]
struct Envelope<'a> {
    /// Borrowed: a type name with escapes in it fails here and takes the `Value` path.
    #[serde(rename = "type", borrow, default)]
    kind: Option<&'a str>,
}

/// A known type's fields straight from its line; `type` and `v` land in `extra`, must say
/// `kind` and [`WIRE_VERSION`], and are taken out again (`shift_remove` keeps the order of the
/// fields that remain).
fn body_of<T: DeserializeOwned>(
    line: &str,
    kind: &str,
    extra: impl FnOnce(&mut T) -> &mut Extra,
) -> Option<T> {
    let mut body: T = serde_json::from_str(line).ok()?;
    let extra = extra(&mut body);
    let Some(Value::String(said)) = extra.shift_remove("type") else {
        return None;
    };
    let Some(Value::Number(version)) = extra.shift_remove("v") else {
        return None;
    };
    (said == kind && version.as_u64() == Some(WIRE_VERSION)).then_some(body)
}

fn decode<T: DeserializeOwned>(kind: &str, body: Value) -> Result<T, LineError> {
    serde_json::from_value(body).map_err(|e| LineError::Fields {
        kind: kind.to_string(),
        reason: e.to_string(),
    })
}

/// Why one line is not a valid event.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    #[error("not valid JSON: {0}")]
    Json(String),
    #[error("not a JSON object")]
    NotAnObject,
    #[error("no \"type\" field")]
    MissingType,
    #[error("\"type\" is not a string")]
    TypeNotString,
    #[error("no \"v\" field (expected \"v\": {WIRE_VERSION})")]
    MissingVersion,
    #[error("unsupported version \"v\": {0} (this droid speaks {WIRE_VERSION})")]
    Version(String),
    #[error("{kind}: {reason}")]
    Fields { kind: String, reason: String },
    #[error("line longer than {MAX_LINE_BYTES} bytes")]
    TooLong,
    #[error("not UTF-8")]
    NotUtf8,
}

/// Reading the stream failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// One line is bad; the reader can go on with the next.
    #[error("line {line}: {reason}")]
    Line { line: u64, reason: LineError },
    /// The input itself failed; nothing more can be read.
    #[error("reading input")]
    Io(#[from] io::Error),
}

/// One line of the stream, decoded.
#[derive(Debug, Clone)]
pub struct Line {
    /// 1-based line number in the input.
    pub number: u64,
    /// The line as it arrived, without its newline.
    pub raw: String,
    /// The decoded event; `None` for a type this version does not know.
    pub event: Option<Event>,
}

/// Reads event lines one at a time, bounded in length, never panicking.
///
/// Blank lines are skipped. A bad line yields [`ReadError::Line`] with its number, and reading
/// goes on with the next line.
pub struct EventReader<R> {
    input: R,
    line: u64,
    buf: Vec<u8>,
}

impl<R: BufRead> EventReader<R> {
    pub fn new(input: R) -> Self {
        EventReader {
            input,
            line: 0,
            buf: Vec::new(),
        }
    }

    /// Reads one raw line into `buf`; `Ok(false)` at end of input. Over-long lines are consumed
    /// to their end and reported, without keeping more than the limit in memory.
    fn read_raw(&mut self) -> Result<Option<Result<(), LineError>>, io::Error> {
        self.buf.clear();
        let mut too_long = false;
        loop {
            let available = match self.input.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                if self.buf.is_empty() && !too_long {
                    return Ok(None);
                }
                break;
            }
            let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
                Some(end) => (&available[..end], true),
                None => (available, false),
            };
            if !too_long && self.buf.len() + chunk.len() <= MAX_LINE_BYTES {
                self.buf.extend_from_slice(chunk);
            } else {
                too_long = true;
                self.buf.clear();
            }
            let consumed = chunk.len() + usize::from(done);
            self.input.consume(consumed);
            if done {
                break;
            }
        }
        self.line += 1;
        if too_long {
            return Ok(Some(Err(LineError::TooLong)));
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(Some(Ok(())))
    }
}

impl<R: BufRead> EventReader<R> {
    /// Reads the next line without decoding it (blank lines included), so the caller can
    /// decode it elsewhere with [`RawLine::decode`]; `None` at end of input.
    pub fn next_raw(&mut self) -> Option<io::Result<RawLine>> {
        let outcome = match self.read_raw() {
            Ok(None) => return None,
            Ok(Some(outcome)) => outcome,
            Err(e) => return Some(Err(e)),
        };
        // A copy of exactly the line's size; `buf` keeps its capacity for the next line.
        let bytes = outcome.map(|()| self.buf.clone());
        Some(Ok(RawLine {
            number: self.line,
            bytes,
        }))
    }
}

/// One line as read, not decoded yet.
#[derive(Debug)]
pub struct RawLine {
    number: u64,
    bytes: Result<Vec<u8>, LineError>,
}

impl RawLine {
    /// A line read elsewhere (without its newline), numbered `number`; over
    /// [`MAX_LINE_BYTES`] it is a bad line.
    pub fn new(number: u64, bytes: Vec<u8>) -> RawLine {
        let bytes = match bytes.len() > MAX_LINE_BYTES {
            true => Err(LineError::TooLong),
            false => Ok(bytes),
        };
        RawLine { number, bytes }
    }

    /// How many bytes of the line are held (none for a line already known to be bad).
    pub fn size(&self) -> usize {
        self.bytes.as_ref().map_or(0, Vec::len)
    }

    /// Decodes the line; `None` for a blank line, which is skipped.
    pub fn decode(self) -> Option<Result<Line, ReadError>> {
        let number = self.number;
        let bad = |reason| {
            Some(Err(ReadError::Line {
                line: number,
                reason,
            }))
        };
        let bytes = match self.bytes {
            Ok(bytes) => bytes,
            Err(reason) => return bad(reason),
        };
        let Ok(raw) = String::from_utf8(bytes) else {
            return bad(LineError::NotUtf8);
        };
        if raw.trim().is_empty() {
            return None;
        }
        match Event::from_line(&raw).and_then(|event| event.map(Event::checked).transpose()) {
            Ok(event) => Some(Ok(Line { number, raw, event })),
            Err(reason) => bad(reason),
        }
    }
}

impl<R: BufRead> Iterator for EventReader<R> {
    type Item = Result<Line, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let raw = match self.next_raw()? {
                Ok(raw) => raw,
                Err(e) => return Some(Err(ReadError::Io(e))),
            };
            if let Some(item) = raw.decode() {
                return Some(item);
            }
        }
    }
}

/// Writes event lines, flushing after each so a co-process stage never waits on a buffer.
pub struct EventWriter<W> {
    output: W,
}

impl<W: Write> EventWriter<W> {
    pub fn new(output: W) -> Self {
        EventWriter { output }
    }

    pub fn write(&mut self, event: &Event) -> io::Result<()> {
        self.write_raw(&event.to_line())
    }

    /// Writes a line exactly as given (pass-through), adding the newline.
    pub fn write_raw(&mut self, line: &str) -> io::Result<()> {
        self.output.write_all(line.as_bytes())?;
        self.output.write_all(b"\n")?;
        self.output.flush()
    }

    /// Writes any JSON value as one line (standalone outputs such as `{"phash": ...}`).
    pub fn write_value(&mut self, value: &Value) -> io::Result<()> {
        self.write_raw(&value.to_string())
    }

    pub fn into_inner(self) -> W {
        self.output
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{ActionType, ErrorKind, NoteKind, MAX_RUN_ID_CHARS};
    use crate::ui::UiElement;

    /// The one line of `input` as a stage reads it.
    fn read_one(input: &str) -> Result<Line, String> {
        read_all(input).remove(0)
    }

    fn read_all(input: &str) -> Vec<Result<Line, String>> {
        EventReader::new(input.as_bytes())
            .map(|r| r.map_err(|e| e.to_string()))
            .collect()
    }

    #[test]
    fn run_ids_that_could_name_a_path_are_refused_in_every_event() {
        for bad in [
            "",
            "../../etc",
            "a/b",
            "a\\b",
            ".hidden",
            "x..y",
            "a b",
            "é",
        ] {
            assert!(check_run_id(bad).is_err(), "{bad:?}");
            for kind in ["run_started", "observation", "decision", "note"] {
                let line = serde_json::json!({"type": kind, "v": 1, "run_id": bad, "kind": "k",
                    "actions": []});
                // Both decoding paths: the direct one and the Value one (a reordered line).
                let reordered = format!(
                    r#"{{"v":1,"run_id":{},"type":"{kind}","kind":"k","actions":[]}}"#,
                    serde_json::to_string(bad).unwrap()
                );
                for line in [line.to_string(), reordered] {
                    let err = read_one(&line).unwrap_err();
                    assert!(err.contains("run_id"), "{line}: {err}");
                }
            }
        }
        assert!(check_run_id(&"r".repeat(MAX_RUN_ID_CHARS + 1)).is_err());
        for good in ["r", "run-20260101T120000-abc123", "emulator-5554_x.y:1"] {
            assert_eq!(check_run_id(good), Ok(()), "{good}");
        }
    }

    #[test]
    fn run_ended_takes_only_the_documented_statuses() {
        for status in RUN_END_STATUSES {
            let line = format!(r#"{{"type":"run_ended","v":1,"run_id":"r","status":"{status}"}}"#);
            assert!(read_one(&line).is_ok(), "{line}");
        }
        for status in ["", "DONE", "completed", "RUNNING"] {
            let line = format!(r#"{{"type":"run_ended","v":1,"run_id":"r","status":"{status}"}}"#);
            let err = read_one(&line).unwrap_err();
            assert!(
                err.contains("is not one of COMPLETED, ERROR, INTERRUPTED"),
                "{err}"
            );
        }
        let empty_run = r#"{"type":"run_ended","v":1,"run_id":"","status":"ERROR"}"#;
        assert!(read_one(empty_run).unwrap_err().contains("empty run_id"));
    }

    #[test]
    fn round_trips_every_type_with_type_and_version_first() {
        let note = Event::Note(Note {
            run_id: Some("r1".into()),
            kind: "warning".into(),
            message: Some("hi".into()),
            ..Note::default()
        });
        let line = note.to_line();
        assert!(line.starts_with(r#"{"type":"note","v":1,"#), "{line}");
        assert_eq!(Event::from_line(&line).unwrap(), Some(note));
    }

    #[test]
    fn keeps_unknown_fields_of_known_types() {
        let line = r#"{"type":"note","v":1,"kind":"x","custom":{"a":[1,2]}}"#;
        let event = Event::from_line(line).unwrap().unwrap();
        assert_eq!(event.to_line(), line);
    }

    #[test]
    fn unknown_fields_keep_their_order() {
        let line = r#"{"type":"result","v":1,"z":1,"index":0,"action_type":"click","b":[2],"success":true,"a":{"c":3}}"#;
        let event = Event::from_line(line).unwrap().unwrap();
        let Event::Result(result) = &event else {
            panic!("{event:?}")
        };
        let keys: Vec<&str> = result.extra.keys().map(String::as_str).collect();
        assert_eq!(keys, ["z", "b", "a"]);
        let value: Value = serde_json::from_str(line).unwrap();
        assert_eq!(Event::from_value(value).unwrap().unwrap(), event);
    }

    #[test]
    fn the_direct_decode_agrees_with_the_value_path() {
        let observation = Event::Observation(Box::new(Observation {
            run_id: Some("r".into()),
            step: Some(3),
            activity: Some("A".into()),
            elements: vec![UiElement {
                text: "Log \"in\" ✓".into(),
                ref_id: Some(2),
                ..UiElement::default()
            }],
            timings: [("dump".to_string(), Value::from(12.5))]
                .into_iter()
                .collect(),
            ..Observation::default()
        }));
        let mut line = observation.to_line();
        line.insert_str(line.len() - 1, r#","custom":{"k":[1,-2,3.5,null]}"#);
        let direct = Event::decode_direct(&line).unwrap();
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(Some(direct), Event::from_value(value).unwrap());
        // Whatever the direct decode does not take goes the `Value` way, errors included.
        assert_eq!(Event::decode_direct(r#"["note",1]"#), None);
        assert_eq!(
            Event::from_line(r#"["note",1]"#),
            Err(LineError::NotAnObject)
        );
        assert_eq!(Event::decode_direct(r#"{"type":"mine","v":1}"#), None);
        let twice = r#"{"type":"note","v":1,"kind":"k","type":"mine"}"#;
        assert_eq!(Event::from_line(twice), Ok(None), "the last \"type\" wins");
        assert_eq!(
            Event::from_line(r#"{"type":"not\u0065","v":1,"kind":"k"}"#)
                .unwrap()
                .map(|e| e.type_name()),
            Some("note")
        );
        assert_eq!(
            Event::from_line(r#"{"type":"note","v":1.0,"kind":"k"}"#),
            Err(LineError::Version("1.0".into()))
        );
    }

    #[test]
    fn unknown_types_pass_as_raw_lines() {
        let input = "{\"type\":\"mine\",\"v\":1,  \"x\":1}\n";
        let lines = read_all(input);
        let line = lines[0].as_ref().unwrap();
        assert!(line.event.is_none());
        assert_eq!(line.raw, "{\"type\":\"mine\",\"v\":1,  \"x\":1}");
    }

    #[test]
    fn bad_lines_name_their_number_and_reading_goes_on() {
        let input = "{\"type\":\"note\",\"v\":1,\"kind\":\"a\"}\nnot json\n\n{\"type\":\"decision\",\"v\":1}\n{\"type\":\"note\",\"kind\":\"b\"}\n{\"type\":\"note\",\"v\":2,\"kind\":\"b\"}\n[1]\n{\"type\":\"note\",\"v\":1,\"kind\":\"c\"}";
        let lines = read_all(input);
        assert_eq!(lines.len(), 7);
        assert!(lines[0].is_ok());
        assert!(lines[1]
            .as_ref()
            .unwrap_err()
            .starts_with("line 2: not valid JSON"));
        let missing = lines[2].as_ref().unwrap_err();
        assert!(
            missing.starts_with("line 4: decision: missing field `actions`"),
            "{missing}"
        );
        assert!(lines[3].as_ref().unwrap_err().contains("line 5: no \"v\""));
        assert!(lines[4]
            .as_ref()
            .unwrap_err()
            .contains("line 6: unsupported version"));
        assert!(lines[5]
            .as_ref()
            .unwrap_err()
            .contains("line 7: not a JSON object"));
        assert_eq!(lines[6].as_ref().unwrap().number, 8);
    }

    #[test]
    fn a_decision_holds_one_to_twelve_actions() {
        let click = r#"{"action":"click","ref":1}"#;
        let decision = |n: usize| {
            let actions = vec![click; n].join(",");
            format!(r#"{{"type":"decision","v":1,"actions":[{actions}]}}"#)
        };
        for n in [1, Decision::MAX_ACTIONS] {
            assert!(read_all(&decision(n))[0].is_ok(), "{n}");
        }
        for n in [0, Decision::MAX_ACTIONS + 1, 1000] {
            let read = read_all(&format!("{}\n", decision(n)));
            let err = read[0].as_ref().unwrap_err();
            assert_eq!(
                err,
                &format!("line 1: decision: {n} actions (a decision holds 1 to 12)")
            );
        }
    }

    #[test]
    fn unknown_words_pass_through_untouched() {
        let line = r#"{"type":"result","v":1,"index":0,"action_type":"pinch","success":false,"duration_ms":0,"error_kind":"thermal","navigated_away":false}"#;
        let event = Event::from_line(line).unwrap().unwrap();
        let Event::Result(result) = &event else {
            panic!("{event:?}")
        };
        assert_eq!(result.action_type, ActionType::Other("pinch".into()));
        assert_eq!(result.error_kind, Some(ErrorKind::Other("thermal".into())));
        assert_eq!(event.to_line(), line);
        let note = r#"{"type":"note","v":1,"kind":"battery_low"}"#;
        assert_eq!(Event::from_line(note).unwrap().unwrap().to_line(), note);
        assert_eq!(NoteKind::parse("crash"), NoteKind::Crash);
    }

    #[test]
    fn wrong_field_types_are_errors_not_drops() {
        let input =
            r#"{"type":"result","v":1,"index":"zero","action_type":"click","success":true}"#;
        let err = read_all(input)[0].as_ref().unwrap_err().clone();
        assert!(err.starts_with("line 1: result: invalid type"), "{err}");
    }

    #[test]
    fn invalid_utf8_and_crlf() {
        let mut input = b"\xff\xfe\n".to_vec();
        input.extend_from_slice(b"{\"type\":\"note\",\"v\":1,\"kind\":\"a\"}\r\n");
        let lines: Vec<_> = EventReader::new(&input[..]).collect();
        assert!(lines[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("not UTF-8"));
        assert!(lines[1].as_ref().unwrap().event.is_some());
    }

    #[test]
    fn writer_flushes_each_line() {
        let mut writer = EventWriter::new(Vec::new());
        writer.write_raw("{}").unwrap();
        writer
            .write(&Event::Note(Note {
                kind: "k".into(),
                ..Note::default()
            }))
            .unwrap();
        let out = String::from_utf8(writer.into_inner()).unwrap();
        assert_eq!(out, "{}\n{\"type\":\"note\",\"v\":1,\"kind\":\"k\"}\n");
    }
}
