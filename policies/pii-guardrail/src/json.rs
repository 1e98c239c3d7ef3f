//! A small JSON reader for the settings document: the whole JSON grammar (RFC 8259), parsed into
//! a tree whose every value knows its line and column, so settings errors can point at them.
//!
//! Why not serde_json: the component is instantiated fresh for every call and reads its settings
//! every time; serde_json added 78 KB to a 146 KB component. Documents are small (64 KiB cap) and
//! nesting is capped at 32 levels.

use std::fmt;

/// 1-based position; `column` counts characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<(Value, Pos)>),
    /// Members in document order (duplicates are refused while parsing).
    Object(Vec<(String, Pos, Value, Pos)>),
}

impl Value {
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub pos: Pos,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {}", self.message, self.pos)
    }
}

const MAX_DEPTH: usize = 32;

/// Parses one JSON document; returns the value and its position.
pub fn parse(text: &str) -> Result<(Value, Pos), Error> {
    let mut p = Parser {
        text,
        at: 0,
        line: 1,
        line_start: 0,
        counted: std::cell::Cell::new((0, 0)),
    };
    p.skip_ws();
    let v = p.value(0)?;
    p.skip_ws();
    if p.at < text.len() {
        return Err(p.error("unexpected text after the document"));
    }
    Ok(v)
}

struct Parser<'t> {
    text: &'t str,
    at: usize,
    line: usize,
    line_start: usize,
    /// `(byte, characters)`: the characters of the current line before `byte`, from the last
    /// [`Parser::pos`], so a one-line document is not recounted from its start for every value.
    counted: std::cell::Cell<(usize, usize)>,
}

impl Parser<'_> {
    fn pos(&self) -> Pos {
        let (byte, chars) = self.counted.get();
        let (from, before) = if (self.line_start..=self.at).contains(&byte) {
            (byte, chars)
        } else {
            (self.line_start, 0)
        };
        let chars = before
            + self
                .text
                .get(from..self.at)
                .map_or(0, |s| s.chars().count());
        self.counted.set((self.at, chars));
        let column = chars + 1;
        Pos {
            line: self.line,
            column,
        }
    }

    fn error(&self, message: impl Into<String>) -> Error {
        Error {
            pos: self.pos(),
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                b'\n' => {
                    self.at += 1;
                    self.line += 1;
                    self.line_start = self.at;
                }
                b' ' | b'\t' | b'\r' => self.at += 1,
                _ => break,
            }
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), Error> {
        if self.peek() == Some(c) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.error(format!("expected `{}`", char::from(c))))
        }
    }

    fn value(&mut self, depth: usize) -> Result<(Value, Pos), Error> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        let pos = self.pos();
        let v = match self.peek() {
            Some(b'{') => self.object(depth)?,
            Some(b'[') => self.array(depth)?,
            Some(b'"') => Value::String(self.string()?),
            Some(b't') => self.word("true", Value::Bool(true))?,
            Some(b'f') => self.word("false", Value::Bool(false))?,
            Some(b'n') => self.word("null", Value::Null)?,
            Some(b'-' | b'0'..=b'9') => self.number()?,
            Some(_) => return Err(self.error("expected a JSON value")),
            None => return Err(self.error("unexpected end of the document")),
        };
        Ok((v, pos))
    }

    fn word(&mut self, word: &str, v: Value) -> Result<Value, Error> {
        if self.text[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(v)
        } else {
            Err(self.error("expected a JSON value"))
        }
    }

    fn number(&mut self) -> Result<Value, Error> {
        let start = self.at;
        let b = self.text.as_bytes();
        let digits = |at: &mut usize| {
            let s = *at;
            while b.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at > s
        };
        let mut at = self.at;
        if b.get(at) == Some(&b'-') {
            at += 1;
        }
        let leading_zero =
            b.get(at) == Some(&b'0') && b.get(at + 1).is_some_and(u8::is_ascii_digit);
        let mut ok = digits(&mut at) && !leading_zero;
        if ok && b.get(at) == Some(&b'.') {
            at += 1;
            ok = digits(&mut at);
        }
        if ok && matches!(b.get(at), Some(b'e' | b'E')) {
            at += 1;
            if matches!(b.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            ok = digits(&mut at);
        }
        self.at = at;
        match self.text[start..at].parse::<f64>() {
            Ok(n) if ok => Ok(Value::Number(n)),
            _ => Err(self.error("invalid number")),
        }
    }

    fn string(&mut self) -> Result<String, Error> {
        self.expect(b'"')?;
        let mut out = String::new();
        loop {
            // Plain characters up to the next quote, backslash or control character in one go.
            let plain = self.text.as_bytes()[self.at..]
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                .unwrap_or(self.text.len() - self.at);
            out.push_str(&self.text[self.at..self.at + plain]);
            self.at += plain;
            let Some(c) = self.text[self.at..].chars().next() else {
                return Err(self.error("unterminated string"));
            };
            match c {
                '"' => {
                    self.at += 1;
                    return Ok(out);
                }
                '\\' => {
                    self.at += 1;
                    let e = self
                        .peek()
                        .ok_or_else(|| self.error("unterminated string"))?;
                    self.at += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => out.push(self.unicode_escape()?),
                        _ => return Err(self.error("invalid escape")),
                    }
                }
                c if u32::from(c) < 0x20 => {
                    return Err(self.error("control character in string"));
                }
                c => {
                    out.push(c);
                    self.at += c.len_utf8();
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, Error> {
        let hex = self
            .text
            .get(self.at..self.at + 4)
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| self.error("invalid \\u escape"))?;
        self.at += 4;
        Ok(hex)
    }

    fn unicode_escape(&mut self) -> Result<char, Error> {
        let first = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&first) {
            if !self.text[self.at..].starts_with("\\u") {
                return Err(self.error("unpaired surrogate"));
            }
            self.at += 2;
            let low = self.hex4()?;
            if !(0xDC00..0xE000).contains(&low) {
                return Err(self.error("unpaired surrogate"));
            }
            0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00)
        } else {
            first
        };
        char::from_u32(code).ok_or_else(|| self.error("invalid \\u escape"))
    }

    fn array(&mut self, depth: usize) -> Result<Value, Error> {
        self.expect(b'[')?;
        self.skip_ws();
        let mut items = Vec::new();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.error("expected `,` or `]`")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, Error> {
        self.expect(b'{')?;
        self.skip_ws();
        let mut members: Vec<(String, Pos, Value, Pos)> = Vec::new();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(Value::Object(members));
        }
        loop {
            self.skip_ws();
            let key_pos = self.pos();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a string key"));
            }
            let key = self.string()?;
            if members.iter().any(|(k, ..)| *k == key) {
                return Err(Error {
                    pos: key_pos,
                    message: format!("duplicate key `{key}`"),
                });
            }
            self.skip_ws();
            self.expect(b':')?;
            self.skip_ws();
            let (v, pos) = self.value(depth + 1)?;
            members.push((key, key_pos, v, pos));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Value::Object(members));
                }
                _ => return Err(self.error("expected `,` or `}`")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_grammar() {
        let (v, _) = parse(
            r#" {"a": [1, -2.5e3, true, false, null], "b": {"c": "x\"\u00e9\ud83d\ude00"}} "#,
        )
        .unwrap();
        let Value::Object(m) = v else { panic!() };
        assert_eq!(m[0].0, "a");
        assert_eq!(
            m[0].2,
            Value::Array(vec![
                (Value::Number(1.0), Pos { line: 1, column: 9 }),
                (
                    Value::Number(-2500.0),
                    Pos {
                        line: 1,
                        column: 12
                    }
                ),
                (
                    Value::Bool(true),
                    Pos {
                        line: 1,
                        column: 20
                    }
                ),
                (
                    Value::Bool(false),
                    Pos {
                        line: 1,
                        column: 26
                    }
                ),
                (
                    Value::Null,
                    Pos {
                        line: 1,
                        column: 33
                    }
                ),
            ])
        );
        let Value::Object(b) = &m[1].2 else { panic!() };
        assert_eq!(b[0].2, Value::String("x\"é😀".into()));
    }

    #[test]
    fn errors_carry_line_and_column() {
        let e = parse("{\n  \"a\": tru\n}").unwrap_err();
        assert_eq!((e.pos.line, e.pos.column), (2, 8));
        assert_eq!(
            parse("{\"a\": 1,}").unwrap_err().message,
            "expected a string key"
        );
        assert_eq!(
            parse("{\"a\": 1} x").unwrap_err().message,
            "unexpected text after the document"
        );
        assert_eq!(
            parse("{\"a\": 1, \"a\": 2}").unwrap_err().message,
            "duplicate key `a`"
        );
        assert!(parse("\"abc").is_err());
        assert!(parse("01").is_err());
        assert!(parse("[1 2]").is_err());
        assert!(
            parse(&"[".repeat(100))
                .unwrap_err()
                .message
                .contains("deeply")
        );
        assert!(parse("\"\\ud800\"").is_err());
    }

    /// Seeded random documents over JSON's alphabet: parsing never panics (a panicking guest
    /// traps, and the request fails closed).
    #[test]
    fn random_documents_never_panic() {
        const PIECES: &[&str] = &[
            "{",
            "}",
            "[",
            "]",
            ":",
            ",",
            "\"",
            "\\",
            "\\u",
            "d83d",
            "00e9",
            "a",
            "1",
            "-",
            ".",
            "e",
            "+",
            "0",
            "true",
            "nul",
            " ",
            "\n",
            "é",
            "😀",
            "\"default\"",
            "\"block\"",
        ];
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..5000 {
            let mut doc = String::new();
            for _ in 0..(state % 40) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                doc.push_str(PIECES[(state % PIECES.len() as u64) as usize]);
            }
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let _ = parse(&doc);
            let _ = crate::settings::Settings::parse(&doc);
        }
    }
}
