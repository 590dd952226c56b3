//! The subset of Java's `.properties` syntax that `server.properties`, `meta.properties` and
//! seglog's topic-config file use: [`parse_properties`] and [`write_properties`].

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::ConfigError;

/// Parses Java `.properties` text, the subset that `server.properties` and `meta.properties`
/// use: one `key=value` (or `key:value`) per line; blank lines and lines starting with `#` or
/// `!` are skipped; keys and values are trimmed; backslash escapes (`\t`, `\n`, `\r`, `\f`,
/// `\uXXXX`, and `\` before any other character) are decoded; a later duplicate key wins, as in
/// Java. Not supported (an error naming the line): a line without `=` or `:`, an empty key, and
/// line continuations (a line ending in an odd number of backslashes).
pub fn parse_properties(text: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut properties = BTreeMap::new();
    for (line_idx, line) in text.split('\n').enumerate() {
        let line_no = line_idx + 1;
        let syntax =
            |reason: &str| ConfigError::Syntax { line: line_no, reason: reason.to_owned() };
        let line = line.strip_suffix('\r').unwrap_or(line);
        let line = line.trim_start_matches([' ', '\t', '\x0c']);
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let trailing_backslashes = line.chars().rev().take_while(|c| *c == '\\').count();
        if trailing_backslashes % 2 == 1 {
            return Err(syntax("line continuations are not supported"));
        }
        let separator = unescaped_separator(line).ok_or_else(|| syntax("no '=' or ':'"))?;
        let (raw_key, raw_value) = (&line[..separator], &line[separator + 1..]);
        let key = unescape_trimmed(raw_key).map_err(|reason| syntax(&reason))?;
        if key.is_empty() {
            return Err(syntax("empty key"));
        }
        let value = unescape_trimmed(raw_value).map_err(|reason| syntax(&reason))?;
        properties.insert(key, value);
    }
    Ok(properties)
}

/// The byte position of the first `=` or `:` not preceded by an escaping backslash.
fn unescaped_separator(line: &str) -> Option<usize> {
    let mut escaped = false;
    for (position, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '=' | ':' => return Some(position),
            _ => {}
        }
    }
    None
}

/// Decodes backslash escapes, dropping whitespace at either end that is not escaped.
fn unescape_trimmed(raw: &str) -> Result<String, String> {
    let mut chars: Vec<(char, bool)> = Vec::with_capacity(raw.len());
    let mut input = raw.chars();
    while let Some(c) = input.next() {
        if c != '\\' {
            chars.push((c, false));
            continue;
        }
        let escaped = input.next().ok_or_else(|| "a lone backslash at the end".to_owned())?;
        let decoded = match escaped {
            't' => '\t',
            'n' => '\n',
            'r' => '\r',
            'f' => '\x0c',
            'u' => {
                let code = read_hex4(&mut input)?;
                if (0xD800..0xDC00).contains(&code) {
                    // A UTF-16 surrogate pair, as Java writes characters beyond the BMP.
                    let low = match (input.next(), input.next()) {
                        (Some('\\'), Some('u')) => read_hex4(&mut input)?,
                        _ => return Err("a high surrogate without its low half".to_owned()),
                    };
                    if !(0xDC00..0xE000).contains(&low) {
                        return Err("a high surrogate without its low half".to_owned());
                    }
                    let code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                    char::from_u32(code).ok_or_else(|| "an invalid surrogate pair".to_owned())?
                } else {
                    char::from_u32(code).ok_or_else(|| "a lone low surrogate".to_owned())?
                }
            }
            other => other,
        };
        chars.push((decoded, true));
    }
    let is_blank = |&(c, escaped): &(char, bool)| !escaped && matches!(c, ' ' | '\t' | '\x0c');
    let start = chars.iter().position(|c| !is_blank(c)).unwrap_or(chars.len());
    let end = chars.iter().rposition(|c| !is_blank(c)).map_or(start, |end| end + 1);
    Ok(chars[start..end].iter().map(|(c, _)| *c).collect())
}

/// The four hex digits of a `\\uXXXX` escape.
fn read_hex4(input: &mut std::str::Chars<'_>) -> Result<u32, String> {
    let hex: String = input.by_ref().take(4).collect();
    u32::from_str_radix(&hex, 16)
        .ok()
        .filter(|_| hex.len() == 4 && hex.bytes().all(|byte| byte.is_ascii_hexdigit()))
        .ok_or_else(|| format!("malformed \\u escape {hex:?}"))
}

/// Writes `key=value` lines in key order, escaped so that [`parse_properties`] and Java's
/// `Properties.load` read the same map back: `\`, `=`, `:`, `#`, `!`, spaces and control
/// characters are escaped, and characters outside printable ASCII are written as `\uXXXX`.
pub fn write_properties(properties: &BTreeMap<String, String>) -> String {
    let mut text = String::new();
    for (key, value) in properties {
        escape_into(&mut text, key);
        text.push('=');
        escape_into(&mut text, value);
        text.push('\n');
    }
    text
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '\\' | '=' | ':' | '#' | '!' | ' ' => {
                out.push('\\');
                out.push(c);
            }
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\x0c' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    // Writing to a String cannot fail.
                    let _ = write!(out, "\\u{unit:04X}");
                }
            }
        }
    }
}
