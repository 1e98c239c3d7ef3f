//! The YAML subset routing documents are written in, parsed into a tree whose every node knows
//! its line and column.
//!
//! Why not a full YAML library: the router is instantiated fresh for every request and parses its
//! document on every call. serde_norway (libyaml underneath) took ~20 µs of the call in Wasm and
//! made the component 266 KB; this parser takes a fraction of that and keeps the component small.
//!
//! Supported: block mappings and sequences (a sequence may sit at its key's indentation), flow
//! sequences `[a, b]` and flow mappings `{k: v}` on one line, plain scalars, 'single-quoted'
//! (`''` is a quote) and "double-quoted" scalars (escapes `\\ \" \/ \n \t`), `#` comments, a
//! leading `---`. Not supported (an error names the line): anchors, aliases, tags, block scalars
//! (`|`, `>`), flow collections or quoted scalars spanning lines, complex keys, tabs in
//! indentation, several documents. Every scalar is a string.

use std::fmt;

/// 1-based position; `column` counts characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Scalar {
    pub text: String,
    /// Where the scalar starts (its opening quote, if quoted).
    pub at: Pos,
    pub quoted: bool,
    /// The text appears in the source exactly as `text` (no escapes), right after `at`
    /// (and the quote).
    pub verbatim: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Scalar(Scalar),
    Seq {
        items: Vec<Node>,
        at: Pos,
    },
    Map {
        entries: Vec<(Scalar, Node)>,
        at: Pos,
    },
}

impl Node {
    pub fn at(&self) -> Pos {
        match self {
            Node::Scalar(s) => s.at,
            Node::Seq { at, .. } | Node::Map { at, .. } => *at,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub at: Pos,
    pub message: String,
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.at.line, self.at.column, self.message
        )
    }
}

/// Deepest nesting accepted.
const MAX_DEPTH: usize = 32;

struct Line<'a> {
    no: usize,
    text: &'a str,
    /// Byte offset where this line's content starts (after indentation and consumed `- `).
    start: usize,
}

impl<'a> Line<'a> {
    fn content(&self) -> &'a str {
        &self.text[self.start..]
    }
    fn pos(&self, byte: usize) -> Pos {
        let byte = byte.min(self.text.len());
        Pos {
            line: self.no,
            column: self.text[..byte].chars().count() + 1,
        }
    }
}

fn is_dash(content: &str) -> bool {
    content == "-" || content.starts_with("- ")
}

fn error<T>(at: Pos, message: impl Into<String>) -> Result<T, YamlError> {
    Err(YamlError {
        at,
        message: message.into(),
    })
}

/// Parses a document of the subset.
pub fn parse(src: &str) -> Result<Node, YamlError> {
    let mut lines = Vec::new();
    for (i, text) in src.lines().enumerate() {
        let no = i + 1;
        let trimmed = text.trim_start_matches(' ');
        if trimmed.starts_with('\t') {
            return error(
                Pos {
                    line: no,
                    column: text.len() - trimmed.len() + 1,
                },
                "tabs are not allowed in indentation",
            );
        }
        let body = trimmed.trim_end();
        if body.is_empty() || body.starts_with('#') || (lines.is_empty() && body == "---") {
            continue;
        }
        lines.push(Line {
            no,
            text: text.trim_end(),
            start: text.len() - trimmed.len(),
        });
    }
    let mut p = Parser {
        lines,
        i: 0,
        depth: 0,
    };
    let Some(first) = p.lines.first() else {
        return error(Pos { line: 1, column: 1 }, "the document is empty");
    };
    let node = p.block(first.start)?;
    if let Some(l) = p.lines.get(p.i) {
        return error(
            l.pos(l.start),
            "unexpected content after the document (check the indentation)",
        );
    }
    Ok(node)
}

struct Parser<'a> {
    lines: Vec<Line<'a>>,
    i: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn descend(&mut self, at: Pos) -> Result<(), YamlError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return error(at, format!("nested deeper than {MAX_DEPTH} levels"));
        }
        Ok(())
    }

    /// A node whose first line is the current one, indented at `indent`.
    fn block(&mut self, indent: usize) -> Result<Node, YamlError> {
        let Some(line) = self.lines.get(self.i) else {
            return error(Pos { line: 1, column: 1 }, "expected a value");
        };
        let at = line.pos(line.start);
        let is_seq = is_dash(line.content());
        let is_map = !is_seq && split_key(line, line.start)?.is_some();
        let scalar = if is_seq || is_map {
            None
        } else {
            Some(inline(line, line.start)?)
        };
        self.descend(at)?;
        let node = match scalar {
            Some(node) => {
                self.i += 1;
                node
            }
            None if is_seq => self.seq(indent)?,
            None => self.map(indent)?,
        };
        self.depth -= 1;
        Ok(node)
    }

    fn seq(&mut self, indent: usize) -> Result<Node, YamlError> {
        let at = self.lines[self.i].pos(indent);
        let mut items = Vec::new();
        while let Some(line) = self.lines.get(self.i) {
            if line.start < indent || !is_dash(line.content()) {
                if line.start > indent {
                    return error(line.pos(line.start), "unexpected indentation");
                }
                break;
            }
            if line.start > indent {
                return error(line.pos(line.start), "unexpected indentation");
            }
            let rest = &line.content()[1..];
            let item_start = line.start + 1 + (rest.len() - rest.trim_start().len());
            if rest.trim().is_empty() || rest.trim_start().starts_with('#') {
                let dash_at = line.pos(line.start);
                self.i += 1;
                match self.lines.get(self.i) {
                    Some(next) if next.start > indent => {
                        let s = next.start;
                        items.push(self.block(s)?);
                    }
                    _ => items.push(empty(dash_at)),
                }
            } else {
                // `- key: value` opens a mapping indented at the item's column.
                self.lines[self.i].start = item_start;
                items.push(self.block(item_start)?);
            }
        }
        Ok(Node::Seq { items, at })
    }

    fn map(&mut self, indent: usize) -> Result<Node, YamlError> {
        let at = self.lines[self.i].pos(indent);
        let mut entries: Vec<(Scalar, Node)> = Vec::new();
        while let Some(line) = self.lines.get(self.i) {
            if line.start < indent || (line.start == indent && is_dash(line.content())) {
                break;
            }
            if line.start > indent {
                return error(line.pos(line.start), "unexpected indentation");
            }
            let Some((key, rest)) = split_key(line, line.start)? else {
                return error(line.pos(line.start), "expected `key: value`");
            };
            if entries.iter().any(|(k, _)| k.text == key.text) {
                return error(key.at, format!("duplicate key `{}`", key.text));
            }
            let value = if line.text[rest..].trim().is_empty()
                || line.text[rest..].trim_start().starts_with('#')
            {
                self.i += 1;
                match self.lines.get(self.i) {
                    Some(next) if next.start > indent => {
                        let s = next.start;
                        self.block(s)?
                    }
                    Some(next) if next.start == indent && is_dash(next.content()) => {
                        let s = next.start;
                        self.block(s)?
                    }
                    _ => empty(key.at),
                }
            } else {
                let node = inline(line, rest)?;
                self.i += 1;
                node
            };
            entries.push((key, value));
        }
        Ok(Node::Map { entries, at })
    }
}

fn empty(at: Pos) -> Node {
    Node::Scalar(Scalar {
        text: String::new(),
        at,
        quoted: false,
        verbatim: false,
    })
}

/// If the line's content from `from` is `key:` (followed by a space or the end), the key and
/// the byte offset after the colon.
fn split_key(line: &Line<'_>, from: usize) -> Result<Option<(Scalar, usize)>, YamlError> {
    let text = line.text;
    let content = &text[from..];
    if content.starts_with('"') || content.starts_with('\'') {
        let (key, end) = quoted(line, from)?;
        let after = &text[end..];
        let trimmed = after.trim_start();
        let colon = end + (after.len() - trimmed.len());
        if trimmed.starts_with(':') && (trimmed.len() == 1 || trimmed[1..].starts_with(' ')) {
            return Ok(Some((key, colon + 1)));
        }
        return Ok(None);
    }
    if content.starts_with(['[', '{', '#']) {
        return Ok(None);
    }
    let bytes = content.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b':' && (i + 1 == bytes.len() || bytes[i + 1] == b' ') {
            let key = content[..i].trim_end();
            if key.is_empty() {
                return error(line.pos(from), "empty key");
            }
            return Ok(Some((
                Scalar {
                    text: key.to_string(),
                    at: line.pos(from),
                    quoted: false,
                    verbatim: true,
                },
                from + i + 1,
            )));
        }
        if *b == b'#' && i > 0 && bytes[i - 1] == b' ' {
            break;
        }
    }
    Ok(None)
}

/// A value written on one line from byte `from`: flow collection or scalar; the rest of the
/// line may only hold a comment.
fn inline(line: &Line<'_>, from: usize) -> Result<Node, YamlError> {
    let mut pos = skip_spaces(line.text, from);
    let node = flow_value(line, &mut pos, false, 0)?;
    let rest = line.text[pos..].trim_start();
    if !rest.is_empty() && !rest.starts_with('#') {
        return error(
            line.pos(line.text.len() - rest.len()),
            format!("unexpected text after the value: `{rest}`"),
        );
    }
    Ok(node)
}

fn skip_spaces(text: &str, mut pos: usize) -> usize {
    while text.as_bytes().get(pos) == Some(&b' ') {
        pos += 1;
    }
    pos
}

fn flow_value(
    line: &Line<'_>,
    pos: &mut usize,
    in_flow: bool,
    depth: usize,
) -> Result<Node, YamlError> {
    let text = line.text;
    let at = line.pos(*pos);
    if depth > MAX_DEPTH {
        return error(at, format!("nested deeper than {MAX_DEPTH} levels"));
    }
    match text.as_bytes().get(*pos) {
        Some(b'[') => {
            *pos += 1;
            let mut items = Vec::new();
            loop {
                *pos = skip_spaces(text, *pos);
                match text.as_bytes().get(*pos) {
                    Some(b']') => {
                        *pos += 1;
                        return Ok(Node::Seq { items, at });
                    }
                    None => {
                        return error(
                            line.pos(*pos),
                            "unclosed `[` (flow sequences must end on their line)",
                        );
                    }
                    _ => {}
                }
                items.push(flow_value(line, pos, true, depth + 1)?);
                *pos = skip_spaces(text, *pos);
                match text.as_bytes().get(*pos) {
                    Some(b',') => *pos += 1,
                    Some(b']') => {}
                    None => {
                        return error(
                            line.pos(*pos),
                            "unclosed `[` (flow sequences must end on their line)",
                        );
                    }
                    _ => return error(line.pos(*pos), "expected `,` or `]`"),
                }
            }
        }
        Some(b'{') => {
            *pos += 1;
            let mut entries: Vec<(Scalar, Node)> = Vec::new();
            loop {
                *pos = skip_spaces(text, *pos);
                match text.as_bytes().get(*pos) {
                    Some(b'}') => {
                        *pos += 1;
                        return Ok(Node::Map { entries, at });
                    }
                    None => {
                        return error(
                            line.pos(*pos),
                            "unclosed `{` (flow mappings must end on their line)",
                        );
                    }
                    _ => {}
                }
                let Node::Scalar(key) = flow_value(line, pos, true, depth + 1)? else {
                    return error(line.pos(*pos), "a key must be a scalar");
                };
                if key.text.is_empty() && !key.quoted {
                    return error(key.at, "expected a key");
                }
                if text.as_bytes().get(*pos) != Some(&b':') {
                    return error(line.pos(*pos), "expected `:` after the key");
                }
                *pos = skip_spaces(text, *pos + 1);
                if entries.iter().any(|(k, _)| k.text == key.text) {
                    return error(key.at, format!("duplicate key `{}`", key.text));
                }
                let value = match text.as_bytes().get(*pos) {
                    Some(b',' | b'}') => empty(line.pos(*pos)),
                    _ => flow_value(line, pos, true, depth + 1)?,
                };
                entries.push((key, value));
                *pos = skip_spaces(text, *pos);
                match text.as_bytes().get(*pos) {
                    Some(b',') => *pos += 1,
                    Some(b'}') => {}
                    None => {
                        return error(
                            line.pos(*pos),
                            "unclosed `{` (flow mappings must end on their line)",
                        );
                    }
                    _ => return error(line.pos(*pos), "expected `,` or `}`"),
                }
            }
        }
        Some(b'"' | b'\'') => {
            let (s, end) = quoted(line, *pos)?;
            *pos = end;
            Ok(Node::Scalar(s))
        }
        Some(b'&' | b'*' | b'!' | b'|' | b'>' | b'%' | b'@' | b'`') => error(
            at,
            "anchors, aliases, tags and block scalars are not supported in routing documents",
        ),
        _ => {
            // Plain scalar: to the end of the line, a ` #` comment, or (in flow) `,` `]` `}` `:`.
            let bytes = text.as_bytes();
            let start = *pos;
            let mut end = start;
            while end < bytes.len() {
                let b = bytes[end];
                if b == b'#' && end > start && bytes[end - 1] == b' ' {
                    break;
                }
                if in_flow
                    && (matches!(b, b',' | b']' | b'}')
                        || (b == b':'
                            && matches!(
                                bytes.get(end + 1),
                                None | Some(b' ' | b',' | b'}' | b']')
                            )))
                {
                    break;
                }
                end += 1;
            }
            *pos = end;
            Ok(Node::Scalar(Scalar {
                text: text[start..end].trim_end().to_string(),
                at,
                quoted: false,
                verbatim: true,
            }))
        }
    }
}

/// A quoted scalar starting at byte `from` (the quote); returns it and the offset after it.
fn quoted(line: &Line<'_>, from: usize) -> Result<(Scalar, usize), YamlError> {
    let text = line.text;
    let quote = text.as_bytes()[from];
    let mut out = String::new();
    let mut verbatim = true;
    let mut chars = text[from + 1..].char_indices();
    while let Some((i, c)) = chars.next() {
        let here = from + 1 + i;
        match (quote, c) {
            (b'\'', '\'') => {
                if text[here + 1..].starts_with('\'') {
                    chars.next();
                    out.push('\'');
                    verbatim = false;
                } else {
                    return Ok((scalar(out, line.pos(from), verbatim), here + 1));
                }
            }
            (b'"', '"') => return Ok((scalar(out, line.pos(from), verbatim), here + 1)),
            (b'"', '\\') => {
                verbatim = false;
                let Some((_, e)) = chars.next() else { break };
                out.push(match e {
                    '\\' => '\\',
                    '"' => '"',
                    '/' => '/',
                    'n' => '\n',
                    't' => '\t',
                    other => {
                        return error(line.pos(here), format!("unsupported escape `\\{other}`"));
                    }
                });
            }
            (_, c) => out.push(c),
        }
    }
    error(
        line.pos(from),
        "unterminated quoted string (quoted scalars must end on their line)",
    )
}

fn scalar(text: String, at: Pos, verbatim: bool) -> Scalar {
    Scalar {
        text,
        at,
        quoted: true,
        verbatim,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(src: &str) -> Node {
        parse(src).unwrap_or_else(|e| panic!("{src:?}: {e}"))
    }

    fn err(src: &str) -> YamlError {
        match parse(src) {
            Ok(n) => panic!("{src:?} parsed: {n:?}"),
            Err(e) => e,
        }
    }

    /// A compact rendering for assertions: scalars as text, `[..]`, `{k: v}`.
    fn show(n: &Node) -> String {
        match n {
            Node::Scalar(s) => s.text.clone(),
            Node::Seq { items, .. } => {
                format!(
                    "[{}]",
                    items.iter().map(show).collect::<Vec<_>>().join(", ")
                )
            }
            Node::Map { entries, .. } => format!(
                "{{{}}}",
                entries
                    .iter()
                    .map(|(k, v)| format!("{}: {}", k.text, show(v)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    #[test]
    fn block_structures() {
        let doc = "\
---
# a comment
name: seed   # trailing comment
routes:
  - name: arabic
    condition: \"language == 'ar'\"
    model: jais
  -
    name: small
    condition: prompt_tokens < 500
list:
- a
- b
empty:
default: x
";
        assert_eq!(
            show(&ok(doc)),
            "{name: seed, routes: [{name: arabic, condition: language == 'ar', model: jais}, \
             {name: small, condition: prompt_tokens < 500}], list: [a, b], empty: , default: x}"
        );
    }

    #[test]
    fn flow_structures() {
        assert_eq!(
            show(&ok("a: []\nb: [x, 'y', \"z\",]\nc: {k: v, q: 'a, b'}\n")),
            "{a: [], b: [x, y, z], c: {k: v, q: a, b}}"
        );
        assert_eq!(
            show(&ok(
                "r:\n  - {name: a, condition: \"x == 'y'\", model: m}\n"
            )),
            "{r: [{name: a, condition: x == 'y', model: m}]}"
        );
        assert_eq!(show(&ok("a: [[1, 2], {b: []}]")), "{a: [[1, 2], {b: []}]}");
    }

    #[test]
    fn quoting() {
        assert_eq!(
            show(&ok(
                "a: 'it''s'\nb: \"q\\\"\\\\\\n\"\nc: 'x # not a comment'\n"
            )),
            "{a: it's, b: q\"\\\n, c: x # not a comment}"
        );
        let Node::Map { entries, .. } = ok("k:   'abc'") else {
            panic!()
        };
        let Node::Scalar(s) = &entries[0].1 else {
            panic!()
        };
        assert_eq!(
            (s.at, s.quoted, s.verbatim),
            (Pos { line: 1, column: 6 }, true, true)
        );
        let Node::Map { entries, .. } = ok("k: 'a''b'") else {
            panic!()
        };
        let Node::Scalar(s) = &entries[0].1 else {
            panic!()
        };
        assert!(!s.verbatim);
        assert_eq!(
            show(&ok("'quoted key': v\n\"k2\": w")),
            "{quoted key: v, k2: w}"
        );
        assert_eq!(show(&ok("url: http://x:80/a#b")), "{url: http://x:80/a#b}");
    }

    #[test]
    fn positions_count_characters() {
        let Node::Map { entries, .. } = ok("ü: 1\nb:\n  - c: é d\n") else {
            panic!()
        };
        assert_eq!(entries[0].1.at(), Pos { line: 1, column: 4 });
        let Node::Seq { items, .. } = &entries[1].1 else {
            panic!()
        };
        let Node::Map { entries: inner, .. } = &items[0] else {
            panic!()
        };
        assert_eq!(inner[0].0.at, Pos { line: 3, column: 5 });
        assert_eq!(inner[0].1.at(), Pos { line: 3, column: 8 });
    }

    #[test]
    fn errors_carry_positions() {
        let cases: &[(&str, (usize, usize), &str)] = &[
            ("", (1, 1), "empty"),
            ("# only\n", (1, 1), "empty"),
            ("a: 1\n\tb: 2\n", (2, 1), "tabs"),
            ("a: 1\n  b: 2\n", (2, 3), "unexpected indentation"),
            ("a:\n  b: 1\n c: 2\n", (3, 2), "unexpected indentation"),
            ("a: [1, 2\n", (1, 9), "unclosed `[`"),
            ("a: {k: v\n", (1, 9), "unclosed `{`"),
            ("a: [1]]\n", (1, 7), "unexpected text"),
            ("a: {k: 1 ]}\n", (1, 10), "expected `,` or `}`"),
            ("a: 'abc\n", (1, 4), "unterminated"),
            ("a: \"\\q\"\n", (1, 5), "unsupported escape"),
            ("a: &x 1\n", (1, 4), "anchors"),
            ("a: *x\n", (1, 4), "anchors"),
            ("a: |\n  text\n", (1, 4), "block scalars"),
            ("a: 1\na: 2\n", (2, 1), "duplicate key `a`"),
            ("a: {k: 1, k: 2}\n", (1, 11), "duplicate key `k`"),
            ("a: 'x' y\n", (1, 8), "unexpected text"),
            ("a: 1\n- b\n", (2, 1), "unexpected content"),
            ("- a\nb: 1\n", (2, 1), "unexpected content"),
            ("just text\nmore: 1\n", (2, 1), "unexpected content"),
            ("a: {: 1}\n", (1, 5), "expected a key"),
            ("a: {k 1}\n", (1, 8), "expected `:`"),
        ];
        for (src, (line, column), text) in cases {
            let e = err(src);
            assert_eq!((e.at.line, e.at.column), (*line, *column), "{src:?}: {e}");
            assert!(e.message.contains(text), "{src:?}: {e}");
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("a: {}{}", "[".repeat(100), "]".repeat(100));
        assert!(err(&deep).message.contains("nested deeper"));
        let mut block = String::new();
        for i in 0..100 {
            block.push_str(&format!("{}k{i}:\n", " ".repeat(i)));
        }
        assert!(err(&block).message.contains("nested deeper"));
    }
}
