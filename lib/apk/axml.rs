//! Android binary XML (the `ResXMLTree` format of `AndroidManifest.xml` inside an APK): a reader
//! and a writer.
//!
//! The format (AOSP `libs/androidfw/include/androidfw/ResourceTypes.h`): a file is one
//! `RES_XML_TYPE` chunk holding a string pool, an optional resource map (the attribute id of
//! each of the first strings), then a flat sequence of namespace, element and text chunks. Every
//! chunk starts with `type: u16, header_size: u16, size: u32`, little-endian. Attribute values
//! are a raw string index and a typed `Res_value` (string, reference, integer, boolean, ...).
//!
//! The reader is bounded and checked: every offset and count is checked against the chunk it
//! lives in, chunks it does not know are skipped by their size, and a file that does not hold
//! together is an [`AxmlError`], never a panic. Attributes are told apart by their resource id
//! when the file has a resource map (obfuscated APKs blank the names and keep the ids), else by
//! namespace and name, as the platform does.

use std::fmt;

/// The `android:` namespace.
pub const ANDROID_NS: &str = "http://schemas.android.com/apk/res/android";

const RES_STRING_POOL_TYPE: u16 = 0x0001;
const RES_XML_TYPE: u16 = 0x0003;
const RES_XML_START_NAMESPACE_TYPE: u16 = 0x0100;
const RES_XML_END_NAMESPACE_TYPE: u16 = 0x0101;
const RES_XML_START_ELEMENT_TYPE: u16 = 0x0102;
const RES_XML_END_ELEMENT_TYPE: u16 = 0x0103;
const RES_XML_RESOURCE_MAP_TYPE: u16 = 0x0180;
const UTF8_FLAG: u32 = 1 << 8;
const NO_INDEX: u32 = 0xffff_ffff;
/// Nesting deeper than this is not a manifest: refused rather than recursed into.
const MAX_DEPTH: usize = 256;

const TYPE_REFERENCE: u8 = 0x01;
const TYPE_STRING: u8 = 0x03;
const TYPE_INT_DEC: u8 = 0x10;
const TYPE_INT_HEX: u8 = 0x11;
const TYPE_INT_BOOLEAN: u8 = 0x12;

/// Why a binary XML file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AxmlError {
    #[error("not Android binary XML: {0}")]
    NotBinaryXml(String),
    #[error("binary XML is damaged at byte {offset}: {detail}")]
    Damaged { offset: usize, detail: String },
}

fn damaged(offset: usize, detail: impl Into<String>) -> AxmlError {
    AxmlError::Damaged {
        offset,
        detail: detail.into(),
    }
}

/// A typed attribute value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    String(String),
    /// `@0x7f0b0001`: a resource, unresolved (that needs `resources.arsc`).
    Reference(u32),
    Int(i32),
    Bool(bool),
    /// Any other `Res_value` (dimensions, colours, floats, attribute references).
    Other {
        data_type: u8,
        data: u32,
    },
}

impl Value {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    fn typed(&self, string_index: impl Fn(&str) -> u32) -> (u8, u32) {
        match self {
            Value::String(s) => (TYPE_STRING, string_index(s)),
            Value::Reference(id) => (TYPE_REFERENCE, *id),
            Value::Int(i) => (TYPE_INT_DEC, *i as u32),
            Value::Bool(b) => (TYPE_INT_BOOLEAN, if *b { NO_INDEX } else { 0 }),
            Value::Other { data_type, data } => (*data_type, *data),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::String(s) => f.write_str(s),
            Value::Reference(id) => write!(f, "@0x{id:08x}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Other { data_type, data } => write!(f, "(type 0x{data_type:x})0x{data:x}"),
        }
    }
}

/// One attribute of an element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    /// The namespace URI (`None` for plain attributes such as the manifest's `package`).
    pub namespace: Option<String>,
    pub name: String,
    /// The attribute's resource id from the resource map (`0x01010003` is `android:name`).
    pub resource_id: Option<u32>,
    pub value: Value,
}

/// One element and everything inside it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Element {
    pub namespace: Option<String>,
    pub name: String,
    /// The line of the element in the source XML the file was compiled from.
    pub line: u32,
    pub attributes: Vec<Attribute>,
    pub children: Vec<Element>,
}

impl Element {
    pub fn new(name: &str) -> Element {
        Element {
            name: name.to_string(),
            ..Element::default()
        }
    }

    /// The value of the attribute known by `resource_id` (when the file mapped one), else by
    /// `namespace` and `name`.
    pub fn attribute(
        &self,
        namespace: Option<&str>,
        name: &str,
        resource_id: Option<u32>,
    ) -> Option<&Value> {
        resource_id
            .and_then(|id| self.attributes.iter().find(|a| a.resource_id == Some(id)))
            .or_else(|| {
                self.attributes
                    .iter()
                    .find(|a| a.name == name && a.namespace.as_deref() == namespace)
            })
            .map(|a| &a.value)
    }

    /// Every element below this one in document order, with its depth (children are 1).
    pub fn descendants(&self) -> Vec<(usize, &Element)> {
        let mut out = Vec::new();
        let mut stack: Vec<(usize, &Element)> =
            self.children.iter().rev().map(|c| (1, c)).collect();
        while let Some((depth, element)) = stack.pop() {
            out.push((depth, element));
            stack.extend(element.children.iter().rev().map(|c| (depth + 1, c)));
        }
        out
    }
}

/// A cursor over little-endian bytes that reports where it failed.
struct Bytes<'a> {
    data: &'a [u8],
}

impl Bytes<'_> {
    fn u16(&self, at: usize) -> Result<u16, AxmlError> {
        self.data
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .ok_or_else(|| damaged(at, "truncated"))
    }

    fn u32(&self, at: usize) -> Result<u32, AxmlError> {
        self.data
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| damaged(at, "truncated"))
    }
}

/// A chunk header: type, header size, total size (checked against what contains it).
fn chunk(bytes: &Bytes, at: usize, end: usize) -> Result<(u16, usize, usize), AxmlError> {
    let kind = bytes.u16(at)?;
    let header = usize::from(bytes.u16(at + 2)?);
    let size = bytes.u32(at + 4)? as usize;
    if header < 8 || size < header || at.checked_add(size).is_none_or(|e| e > end) {
        return Err(damaged(
            at,
            format!("chunk 0x{kind:04x} claims header {header} and size {size}"),
        ));
    }
    Ok((kind, header, size))
}

/// A string pool's strings.
fn string_pool(
    bytes: &Bytes,
    at: usize,
    header: usize,
    size: usize,
) -> Result<Vec<String>, AxmlError> {
    if header < 28 {
        return Err(damaged(at, "string pool header too short"));
    }
    let count = bytes.u32(at + 8)? as usize;
    let flags = bytes.u32(at + 16)?;
    let strings_start = bytes.u32(at + 20)? as usize;
    let end = at + size;
    if count > size / 4 || at + header + count * 4 > end || at + strings_start > end {
        return Err(damaged(at, format!("string pool claims {count} strings")));
    }
    let utf8 = flags & UTF8_FLAG != 0;
    let data = &bytes.data[at + strings_start..end];
    (0..count)
        .map(|i| {
            let offset = bytes.u32(at + header + i * 4)? as usize;
            let text = if utf8 {
                utf8_string(data, offset)
            } else {
                utf16_string(data, offset)
            };
            text.ok_or_else(|| {
                damaged(
                    at + strings_start + offset,
                    format!("string {i} is damaged"),
                )
            })
        })
        .collect()
}

/// A UTF-8 pool entry: its UTF-16 length, its byte length (each 1 or 2 bytes), the bytes.
fn utf8_string(data: &[u8], at: usize) -> Option<String> {
    let length = |at: usize| -> Option<(usize, usize)> {
        let first = *data.get(at)? as usize;
        if first & 0x80 != 0 {
            Some((((first & 0x7f) << 8) | *data.get(at + 1)? as usize, 2))
        } else {
            Some((first, 1))
        }
    };
    let (_, skip) = length(at)?;
    let (len, skip2) = length(at + skip)?;
    let start = at + skip + skip2;
    let raw = data.get(start..start.checked_add(len)?)?;
    Some(String::from_utf8_lossy(raw).into_owned())
}

/// A UTF-16 pool entry: its length in code units (1 or 2 u16), the units.
fn utf16_string(data: &[u8], at: usize) -> Option<String> {
    let unit =
        |i: usize| -> Option<u16> { data.get(i..i + 2).map(|b| u16::from_le_bytes([b[0], b[1]])) };
    let first = unit(at)? as usize;
    let (len, start) = if first & 0x8000 != 0 {
        (((first & 0x7fff) << 16) | unit(at + 2)? as usize, at + 4)
    } else {
        (first, at + 2)
    };
    let raw = data.get(start..start.checked_add(len.checked_mul(2)?)?)?;
    let units: Vec<u16> = raw
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect();
    Some(String::from_utf16_lossy(&units))
}

/// Reads a binary XML document; its root element.
pub fn parse(data: &[u8]) -> Result<Element, AxmlError> {
    let bytes = Bytes { data };
    if data.len() < 8 || bytes.u16(0)? != RES_XML_TYPE {
        return Err(AxmlError::NotBinaryXml(match data.get(..5) {
            Some(b"<?xml") => "a text XML file".to_string(),
            _ => "no RES_XML_TYPE header".to_string(),
        }));
    }
    let (_, header, size) = chunk(&bytes, 0, data.len())?;
    let mut strings: Vec<String> = Vec::new();
    let mut resource_ids: Vec<u32> = Vec::new();
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    let string = |strings: &[String], index: u32, at: usize| -> Result<Option<String>, AxmlError> {
        match index {
            NO_INDEX => Ok(None),
            i => strings
                .get(i as usize)
                .cloned()
                .map(Some)
                .ok_or_else(|| damaged(at, format!("string index {i} out of range"))),
        }
    };
    let mut at = header;
    while at + 8 <= size {
        let (kind, chunk_header, chunk_size) = chunk(&bytes, at, size)?;
        let body = at + chunk_header;
        match kind {
            RES_STRING_POOL_TYPE => strings = string_pool(&bytes, at, chunk_header, chunk_size)?,
            RES_XML_RESOURCE_MAP_TYPE => {
                resource_ids = (body..at + chunk_size)
                    .step_by(4)
                    .filter(|i| i + 4 <= at + chunk_size)
                    .map(|i| bytes.u32(i))
                    .collect::<Result<_, _>>()?;
            }
            RES_XML_START_ELEMENT_TYPE => {
                if stack.len() >= MAX_DEPTH {
                    return Err(damaged(at, "elements nested too deep"));
                }
                let line = bytes.u32(at + 8)?;
                let namespace = string(&strings, bytes.u32(body)?, at)?;
                let name = string(&strings, bytes.u32(body + 4)?, at)?.unwrap_or_default();
                let attr_start = usize::from(bytes.u16(body + 8)?);
                let attr_size = usize::from(bytes.u16(body + 10)?);
                let count = usize::from(bytes.u16(body + 12)?);
                if attr_size < 20 || body + attr_start + count * attr_size > at + chunk_size {
                    return Err(damaged(
                        at,
                        format!("element <{name}> claims {count} attributes"),
                    ));
                }
                let mut attributes = Vec::with_capacity(count);
                for i in 0..count {
                    let a = body + attr_start + i * attr_size;
                    let name_index = bytes.u32(a + 4)?;
                    let raw = bytes.u32(a + 8)?;
                    let data_type = data[a + 15];
                    let value_data = bytes.u32(a + 16)?;
                    let value = match data_type {
                        TYPE_STRING => {
                            Value::String(string(&strings, value_data, a)?.unwrap_or_default())
                        }
                        TYPE_REFERENCE => Value::Reference(value_data),
                        TYPE_INT_DEC | TYPE_INT_HEX => Value::Int(value_data as i32),
                        TYPE_INT_BOOLEAN => Value::Bool(value_data != 0),
                        // Some compilers leave the typed value empty and keep only the raw string.
                        _ if raw != NO_INDEX => {
                            Value::String(string(&strings, raw, a)?.unwrap_or_default())
                        }
                        _ => Value::Other {
                            data_type,
                            data: value_data,
                        },
                    };
                    attributes.push(Attribute {
                        namespace: string(&strings, bytes.u32(a)?, a)?,
                        name: string(&strings, name_index, a)?.unwrap_or_default(),
                        resource_id: resource_ids.get(name_index as usize).copied(),
                        value,
                    });
                }
                stack.push(Element {
                    namespace,
                    name,
                    line,
                    attributes,
                    children: Vec::new(),
                });
            }
            RES_XML_END_ELEMENT_TYPE => {
                let element = stack
                    .pop()
                    .ok_or_else(|| damaged(at, "an element ends that never started"))?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(element),
                    None if root.is_none() => root = Some(element),
                    None => return Err(damaged(at, "a second root element")),
                }
            }
            // Namespace declarations (attributes carry their URI), text between elements
            // (RES_XML_CDATA_TYPE) and chunks this reader does not know: skipped by size.
            _ => {}
        }
        at += chunk_size;
    }
    if !stack.is_empty() {
        return Err(damaged(
            size,
            format!("<{}> never ends", stack[stack.len() - 1].name),
        ));
    }
    root.ok_or_else(|| damaged(size, "no root element"))
}

/// Collects the strings of a tree in a stable order: attribute names with a resource id come
/// first (the resource map covers a prefix of the pool, as aapt lays it out).
struct Pool {
    strings: Vec<String>,
    ids: Vec<u32>,
}

impl Pool {
    fn index(&mut self, s: &str) -> u32 {
        match self.strings.iter().position(|x| x == s) {
            Some(i) => i as u32,
            None => {
                self.strings.push(s.to_string());
                (self.strings.len() - 1) as u32
            }
        }
    }

    /// The index of an attribute name without a resource id: never one of the mapped prefix,
    /// which the platform would take for the mapped attribute.
    fn index_unmapped(&mut self, s: &str) -> u32 {
        match self
            .strings
            .iter()
            .skip(self.ids.len())
            .position(|x| x == s)
        {
            Some(i) => (i + self.ids.len()) as u32,
            None => {
                self.strings.push(s.to_string());
                (self.strings.len() - 1) as u32
            }
        }
    }

    fn find(&self, s: &str) -> u32 {
        self.strings
            .iter()
            .position(|x| x == s)
            .map_or(NO_INDEX, |i| i as u32)
    }
}

fn collect_ids(element: &Element, pool: &mut Pool) {
    for a in &element.attributes {
        if let Some(id) = a.resource_id {
            if !pool
                .strings
                .iter()
                .take(pool.ids.len())
                .any(|s| *s == a.name)
            {
                pool.strings.push(a.name.clone());
                pool.ids.push(id);
            }
        }
    }
    for child in &element.children {
        collect_ids(child, pool);
    }
}

fn collect_strings(element: &Element, pool: &mut Pool) {
    if let Some(ns) = &element.namespace {
        pool.index(ns);
    }
    pool.index(&element.name);
    for a in &element.attributes {
        if let Some(ns) = &a.namespace {
            pool.index(ns);
        }
        if a.resource_id.is_none() {
            pool.index_unmapped(&a.name);
        }
        if let Value::String(s) = &a.value {
            pool.index(s);
        }
    }
    for child in &element.children {
        collect_strings(child, pool);
    }
}

fn put_chunk(out: &mut Vec<u8>, kind: u16, header: u16, body: &[u8]) {
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&header.to_le_bytes());
    out.extend_from_slice(&((8 + body.len()) as u32).to_le_bytes());
    out.extend_from_slice(body);
}

fn u32s(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The UTF-16 string pool chunk of `strings`.
fn write_pool(strings: &[String]) -> Vec<u8> {
    let mut data = Vec::new();
    let mut offsets = Vec::with_capacity(strings.len());
    for s in strings {
        offsets.push(data.len() as u32);
        let units: Vec<u16> = s.encode_utf16().collect();
        let len = units.len();
        if len > 0x7fff {
            data.extend_from_slice(&(0x8000 | (len >> 16) as u16).to_le_bytes());
            data.extend_from_slice(&((len & 0xffff) as u16).to_le_bytes());
        } else {
            data.extend_from_slice(&(len as u16).to_le_bytes());
        }
        for unit in units {
            data.extend_from_slice(&unit.to_le_bytes());
        }
        data.extend_from_slice(&[0, 0]);
    }
    while data.len() % 4 != 0 {
        data.push(0);
    }
    let strings_start = 28 + 4 * strings.len() as u32;
    let mut body = u32s(&[strings.len() as u32, 0, 0, strings_start, 0]);
    body.extend(u32s(&offsets));
    body.extend(data);
    let mut out = Vec::new();
    put_chunk(&mut out, RES_STRING_POOL_TYPE, 28, &body);
    out
}

fn write_element(element: &Element, pool: &Pool, out: &mut Vec<u8>) {
    let ns = element
        .namespace
        .as_deref()
        .map_or(NO_INDEX, |n| pool.find(n));
    let name = pool.find(&element.name);
    let mut body = u32s(&[element.line, NO_INDEX, ns, name]);
    body.extend_from_slice(&20u16.to_le_bytes()); // attributeStart
    body.extend_from_slice(&20u16.to_le_bytes()); // attributeSize
    body.extend_from_slice(&(element.attributes.len() as u16).to_le_bytes());
    body.extend_from_slice(&[0; 6]); // id, class and style indexes: none
    for a in &element.attributes {
        let (data_type, data) = a.value.typed(|s| pool.find(s));
        let raw = match &a.value {
            Value::String(s) => pool.find(s),
            _ => NO_INDEX,
        };
        // Attribute names with a resource id are looked up in the mapped prefix of the pool.
        let name = match a.resource_id {
            Some(id) => pool
                .ids
                .iter()
                .zip(&pool.strings)
                .position(|(i, s)| *i == id && *s == a.name)
                .map_or(NO_INDEX, |i| i as u32),
            None => pool
                .strings
                .iter()
                .skip(pool.ids.len())
                .position(|s| *s == a.name)
                .map_or(NO_INDEX, |i| (i + pool.ids.len()) as u32),
        };
        body.extend(u32s(&[
            a.namespace.as_deref().map_or(NO_INDEX, |n| pool.find(n)),
            name,
            raw,
        ]));
        body.extend_from_slice(&8u16.to_le_bytes());
        body.push(0);
        body.push(data_type);
        body.extend_from_slice(&data.to_le_bytes());
    }
    put_chunk(out, RES_XML_START_ELEMENT_TYPE, 16, &body);
    for child in &element.children {
        write_element(child, pool, out);
    }
    put_chunk(
        out,
        RES_XML_END_ELEMENT_TYPE,
        16,
        &u32s(&[element.line, NO_INDEX, ns, name]),
    );
}

/// Writes `root` as binary XML, declaring the `android` namespace, the way aapt lays a manifest
/// out: string pool, resource map, namespace, elements.
pub fn write(root: &Element) -> Vec<u8> {
    let mut pool = Pool {
        strings: Vec::new(),
        ids: Vec::new(),
    };
    collect_ids(root, &mut pool);
    pool.index("android");
    pool.index(ANDROID_NS);
    collect_strings(root, &mut pool);
    let mut body = write_pool(&pool.strings);
    if !pool.ids.is_empty() {
        put_chunk(&mut body, RES_XML_RESOURCE_MAP_TYPE, 8, &u32s(&pool.ids));
    }
    let namespace = u32s(&[
        root.line,
        NO_INDEX,
        pool.find("android"),
        pool.find(ANDROID_NS),
    ]);
    put_chunk(&mut body, RES_XML_START_NAMESPACE_TYPE, 16, &namespace);
    write_element(root, &pool, &mut body);
    put_chunk(&mut body, RES_XML_END_NAMESPACE_TYPE, 16, &namespace);
    let mut out = Vec::with_capacity(8 + body.len());
    put_chunk(&mut out, RES_XML_TYPE, 8, &body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Element {
        let mut root = Element::new("manifest");
        root.line = 2;
        root.attributes.push(Attribute {
            namespace: None,
            name: "package".into(),
            resource_id: None,
            value: Value::String("com.example.tiny".into()),
        });
        let mut application = Element::new("application");
        application.line = 3;
        let mut activity = Element::new("activity");
        activity.line = 4;
        activity.attributes.push(Attribute {
            namespace: Some(ANDROID_NS.into()),
            name: "name".into(),
            resource_id: Some(0x0101_0003),
            value: Value::String("com.example.tiny.MainActivity".into()),
        });
        activity.attributes.push(Attribute {
            namespace: Some(ANDROID_NS.into()),
            name: "exported".into(),
            resource_id: Some(0x0101_0010),
            value: Value::Bool(true),
        });
        application.children.push(activity);
        root.children.push(application);
        root
    }

    #[test]
    fn what_is_written_reads_back_the_same() {
        let root = sample();
        let bytes = write(&root);
        assert_eq!(parse(&bytes).unwrap(), root);
    }

    #[test]
    fn attributes_are_found_by_resource_id_even_without_a_name() {
        let mut root = sample();
        let activity = &mut root.children[0].children[0];
        activity.attributes[0].name = String::new();
        let back = parse(&write(&root)).unwrap();
        let name =
            back.children[0].children[0].attribute(Some(ANDROID_NS), "name", Some(0x0101_0003));
        assert_eq!(
            name.and_then(Value::as_str),
            Some("com.example.tiny.MainActivity")
        );
    }

    #[test]
    fn damaged_files_are_errors_not_panics() {
        let bytes = write(&sample());
        for cut in 0..bytes.len() {
            let _ = parse(&bytes[..cut]);
        }
        let mut flipped = bytes.clone();
        for i in 8..flipped.len() {
            flipped[i] ^= 0xff;
            let _ = parse(&flipped);
            flipped[i] ^= 0xff;
        }
        assert!(matches!(
            parse(b"<?xml version"),
            Err(AxmlError::NotBinaryXml(_))
        ));
        assert!(
            parse(&bytes[..bytes.len() - 8]).is_err(),
            "a root that never ends"
        );
    }

    #[test]
    fn utf8_pools_and_long_utf16_strings_decode() {
        // "héllo" in a UTF-8 pool entry: UTF-16 length 5, byte length 6.
        let data = [5, 6, b'h', 0xc3, 0xa9, b'l', b'l', b'o', 0];
        assert_eq!(utf8_string(&data, 0).as_deref(), Some("héllo"));
        let long = "x".repeat(40_000);
        let pool = write_pool(std::slice::from_ref(&long));
        let bytes = Bytes { data: &pool };
        assert_eq!(string_pool(&bytes, 0, 28, pool.len()).unwrap(), vec![long]);
    }
}
