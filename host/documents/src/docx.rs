//! DOCX: `word/document.xml` read as a stream from its zip container, under the archive's
//! entry, inflation and ratio limits and the XML depth and text limits. Paragraphs (`w:p`) with
//! headings (`w:pStyle`, `w:outlineLvl`), list items (`w:numPr`), `w:bidi`, and table rows
//! (`w:tr`, cells joined with ` | `) become blocks.

use std::cell::Cell;
use std::io::{BufReader, Cursor, Read};
use std::rc::Rc;

use quick_xml::events::{BytesStart, Event};

use crate::normalize::{mostly_rtl, normalize};
use crate::{Block, Document, ExtractError, Kind, Limits, Role};

/// Below this many inflated bytes an entry's compression ratio is not checked: small XML
/// compresses far better than 100:1 and cannot hurt.
const RATIO_FLOOR: u64 = 1 << 20;

/// Why a [`Bounded`] reader stopped.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trip {
    None,
    Total,
    Ratio,
}

/// Counts the bytes inflated from one entry and fails the read past the total or ratio budget.
struct Bounded<R> {
    inner: R,
    read: u64,
    budget: u64,
    compressed: u64,
    max_ratio: u64,
    trip: Rc<Cell<Trip>>,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        let trip = if self.read > self.budget {
            Trip::Total
        } else if self.read > RATIO_FLOOR
            && self.read > self.compressed.saturating_mul(self.max_ratio)
        {
            Trip::Ratio
        } else {
            return Ok(n);
        };
        self.trip.set(trip);
        Err(std::io::Error::other("inflation budget exceeded"))
    }
}

/// The paragraph being read.
#[derive(Default)]
struct Para {
    text: String,
    heading: Option<u8>,
    list: bool,
    bidi: bool,
}

/// The table being read: the current row's cells and the current cell's text.
#[derive(Default)]
struct Table {
    row: Vec<String>,
    cell: String,
    bidi: bool,
}

fn attr_val(e: &BytesStart<'_>) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == "val")
        .map(|a| a.value.into_owned())
}

/// `Heading2`, `heading 2`, `Title` → a heading level.
fn heading_level(style: &str) -> Option<u8> {
    let lower = style.to_ascii_lowercase();
    if lower == "title" {
        return Some(1);
    }
    if lower == "subtitle" {
        return Some(2);
    }
    let rest = lower.strip_prefix("heading")?.trim();
    rest.parse::<u8>().ok().filter(|l| (1..=9).contains(l))
}

/// Collects blocks as paragraphs and rows close.
struct Builder<'l> {
    limits: &'l Limits,
    blocks: Vec<Block>,
    paras: Vec<Para>,
    tables: Vec<Table>,
    chars: u64,
}

impl Builder<'_> {
    fn push_text(&mut self, s: &str) -> Result<(), ExtractError> {
        if let Some(p) = self.paras.last_mut() {
            self.chars += s.chars().count() as u64;
            self.limits.check_text(self.chars)?;
            p.text.push_str(s);
        }
        Ok(())
    }

    fn emit(&mut self, text: &str, role: Role, bidi: bool) {
        let text = normalize(text);
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        self.blocks.push(Block {
            page: None,
            paragraph: self.blocks.len() as u32 + 1,
            role,
            rtl: bidi || mostly_rtl(text),
            text: text.to_owned(),
        });
    }

    fn end_paragraph(&mut self) {
        let Some(p) = self.paras.pop() else { return };
        let text = if p.list {
            format!("• {}", p.text.trim())
        } else {
            p.text
        };
        if let Some(outer) = self.paras.last_mut() {
            // A text box's paragraph inside a run of an outer paragraph.
            outer.text.push(' ');
            outer.text.push_str(&text);
        } else if let Some(table) = self.tables.last_mut() {
            if !table.cell.is_empty() {
                table.cell.push(' ');
            }
            table.cell.push_str(text.trim());
            table.bidi |= p.bidi;
        } else {
            let role = match p.heading {
                Some(level) => Role::Heading { level },
                None if p.list => Role::ListItem,
                None => Role::Body,
            };
            self.emit(&text, role, p.bidi);
        }
    }

    fn end_row(&mut self) {
        let Some(table) = self.tables.last_mut() else {
            return;
        };
        let cells: Vec<String> = std::mem::take(&mut table.row)
            .into_iter()
            .filter(|c| !c.trim().is_empty())
            .collect();
        let bidi = table.bidi;
        let row = cells.join(" | ");
        let n = self.tables.len();
        if n >= 2 {
            // A nested table's row goes into the outer table's cell.
            let outer = &mut self.tables[n - 2];
            if !outer.cell.is_empty() && !row.is_empty() {
                outer.cell.push_str(" / ");
            }
            outer.cell.push_str(&row);
        } else {
            self.emit(&row, Role::TableRow, bidi);
        }
    }

    fn end_cell(&mut self) {
        if let Some(table) = self.tables.last_mut() {
            let cell = std::mem::take(&mut table.cell);
            table.row.push(cell);
        }
    }

    /// An element that opens (`Start`) or stands alone (`Empty`), with its parent's name.
    fn element(
        &mut self,
        e: &BytesStart<'_>,
        parent: &str,
        start: bool,
    ) -> Result<(), ExtractError> {
        match e.local_name().as_ref() {
            "p" if start => self.paras.push(Para::default()),
            "tbl" if start => self.tables.push(Table::default()),
            "tab" if parent == "r" => self.push_text("\t")?,
            "br" | "cr" if parent == "r" => self.push_text("\n")?,
            "noBreakHyphen" => self.push_text("-")?,
            "pStyle" if parent == "pPr" => {
                if let (Some(p), Some(level)) = (
                    self.paras.last_mut(),
                    attr_val(e).as_deref().and_then(heading_level),
                ) {
                    p.heading = Some(level);
                }
            }
            "outlineLvl" if parent == "pPr" => {
                let level = attr_val(e).and_then(|v| v.parse::<u8>().ok());
                if let (Some(p), Some(level @ 0..=8)) = (self.paras.last_mut(), level) {
                    p.heading = Some(level + 1);
                }
            }
            "numPr" if parent == "pPr" => {
                if let Some(p) = self.paras.last_mut() {
                    p.list = true;
                }
            }
            "bidi" if parent == "pPr" => {
                let on = !matches!(attr_val(e).as_deref(), Some("0" | "false" | "off"));
                if let Some(p) = self.paras.last_mut() {
                    p.bidi = on;
                }
            }
            "bidiVisual" if parent == "tblPr" => {
                if let Some(t) = self.tables.last_mut() {
                    t.bidi = true;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The character an entity reference stands for (`&amp;`, `&#x0627;`, …).
fn resolve_ref(name: &str) -> Option<char> {
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => {
            let num = name.strip_prefix('#')?;
            let code = match num.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => num.parse().ok()?,
            };
            char::from_u32(code)
        }
    }
}

/// Parses `word/document.xml` from any reader.
fn parse(
    xml: impl std::io::BufRead,
    limits: &Limits,
    trip: &Cell<Trip>,
) -> Result<Vec<Block>, ExtractError> {
    let mut reader = quick_xml::Reader::from_reader(xml);
    reader.config_mut().check_end_names = true;
    let mut b = Builder {
        limits,
        blocks: Vec::new(),
        paras: Vec::new(),
        tables: Vec::new(),
        chars: 0,
    };
    // Local names of the open elements (bounded by the depth cap).
    let mut stack: Vec<String> = Vec::new();
    // Depth at which a skipped subtree (`mc:Fallback`, deleted text) started.
    let mut skip_from: Option<usize> = None;
    let mut buf = Vec::new();
    loop {
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| match trip.get() {
                Trip::Total => ExtractError::ZipBomb {
                    reason: format!(
                        "word/document.xml inflates past {} bytes",
                        limits.max_inflated_bytes
                    ),
                },
                Trip::Ratio => ExtractError::ZipBomb {
                    reason: format!(
                        "word/document.xml inflates more than {}:1",
                        limits.max_ratio
                    ),
                },
                Trip::None => ExtractError::malformed(format!(
                    "word/document.xml is not well-formed XML ({e})"
                )),
            })?;
        match event {
            Event::Start(e) => {
                if stack.len() as u32 >= limits.max_xml_depth {
                    return Err(ExtractError::XmlTooDeep {
                        limit: limits.max_xml_depth,
                    });
                }
                let name = e.local_name().as_ref().to_owned();
                if skip_from.is_none() && matches!(name.as_str(), "Fallback" | "del") {
                    skip_from = Some(stack.len());
                }
                if skip_from.is_none() {
                    let parent = stack.last().map(String::as_str).unwrap_or_default();
                    b.element(&e, parent, true)?;
                }
                stack.push(name);
            }
            Event::Empty(e) if skip_from.is_none() => {
                let parent = stack.last().map(String::as_str).unwrap_or_default();
                b.element(&e, parent, false)?;
            }
            Event::End(e) => {
                stack.pop();
                if let Some(depth) = skip_from {
                    if stack.len() == depth {
                        skip_from = None;
                    }
                    continue;
                }
                match e.local_name().as_ref() {
                    "p" => b.end_paragraph(),
                    "tc" => b.end_cell(),
                    "tr" => b.end_row(),
                    "tbl" => {
                        b.tables.pop();
                    }
                    _ => {}
                }
            }
            Event::Text(t) if skip_from.is_none() && stack.last().is_some_and(|n| n == "t") => {
                b.push_text(&t.xml10_content())?;
            }
            Event::GeneralRef(r)
                if skip_from.is_none() && stack.last().is_some_and(|n| n == "t") =>
            {
                if let Some(c) = resolve_ref(&r.xml10_content()) {
                    b.push_text(c.encode_utf8(&mut [0; 4]))?;
                }
            }
            Event::CData(c) if skip_from.is_none() && stack.last().is_some_and(|n| n == "t") => {
                b.push_text(&c.xml10_content())?;
            }
            Event::DocType(_) => {
                return Err(ExtractError::malformed(
                    "word/document.xml declares a DOCTYPE, which Word never writes",
                ));
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if !stack.is_empty() {
        return Err(ExtractError::malformed(
            "word/document.xml ends before its elements close (truncated)",
        ));
    }
    Ok(b.blocks)
}

/// Reads the entry count from the end-of-central-directory record before the zip crate parses
/// (and allocates for) every central-directory entry: a 50 MiB archive can declare a million.
/// A zip64 count (0xFFFF) is refused: a DOCX under the size limit never needs it.
pub(crate) fn precheck_entries(bytes: &[u8], limits: &Limits) -> Result<(), ExtractError> {
    let tail_start = bytes.len().saturating_sub(22 + 65_535);
    let tail = &bytes[tail_start..];
    let Some(at) = tail.windows(4).rposition(|w| w == b"PK\x05\x06") else {
        return Err(ExtractError::malformed(
            "the zip container has no end-of-central-directory record (truncated)",
        ));
    };
    let count = tail
        .get(at + 10..at + 12)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .ok_or_else(|| ExtractError::malformed("the zip container's directory is cut short"))?;
    if count == u16::MAX || u64::from(count) > limits.max_entries {
        return Err(ExtractError::ZipBomb {
            reason: format!(
                "{} entries, over the limit of {}",
                if count == u16::MAX {
                    "zip64: 65,535 or more".to_owned()
                } else {
                    count.to_string()
                },
                limits.max_entries
            ),
        });
    }
    Ok(())
}

pub(crate) fn extract(bytes: &[u8], limits: &Limits) -> Result<Document, ExtractError> {
    precheck_entries(bytes, limits)?;
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| {
        ExtractError::malformed(format!("the DOCX zip container cannot be read ({e})"))
    })?;
    let entries = archive.len() as u64;
    if entries > limits.max_entries {
        return Err(ExtractError::ZipBomb {
            reason: format!(
                "{entries} entries, over the limit of {}",
                limits.max_entries
            ),
        });
    }
    // Declared sizes first: a classic bomb says what it is in its central directory.
    let mut declared: u64 = 0;
    for i in 0..archive.len() {
        let entry = archive
            .by_index_raw(i)
            .map_err(|e| ExtractError::malformed(format!("DOCX entry {i} cannot be read ({e})")))?;
        declared = declared.saturating_add(entry.size());
    }
    if declared > limits.max_inflated_bytes {
        return Err(ExtractError::ZipBomb {
            reason: format!(
                "its entries declare {declared} inflated bytes, over the limit of {}",
                limits.max_inflated_bytes
            ),
        });
    }
    let entry = archive.by_name("word/document.xml").map_err(|e| match e {
        zip::result::ZipError::FileNotFound => {
            ExtractError::malformed("the DOCX has no word/document.xml")
        }
        e => ExtractError::malformed(format!("word/document.xml cannot be read ({e})")),
    })?;
    let compressed = entry.compressed_size().min(bytes.len() as u64).max(1);
    let trip = Rc::new(Cell::new(Trip::None));
    let bounded = Bounded {
        inner: entry,
        read: 0,
        budget: limits.max_inflated_bytes,
        compressed,
        max_ratio: limits.max_ratio,
        trip: Rc::clone(&trip),
    };
    let blocks = parse(BufReader::with_capacity(64 << 10, bounded), limits, &trip)?;
    Ok(Document {
        kind: Kind::Docx,
        pages: None,
        blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(xml: &str) -> Result<Vec<Block>, ExtractError> {
        parse(xml.as_bytes(), &Limits::default(), &Cell::new(Trip::None))
    }

    const W: &str = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;

    #[test]
    fn paragraphs_headings_lists_tables_bidi() {
        let xml = format!(
            r#"<w:document {W}><w:body>
<w:p><w:pPr><w:pStyle w:val="Heading1"/><w:bidi/></w:pPr><w:r><w:t>السياسة</w:t></w:r></w:p>
<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/></w:numPr></w:pPr><w:r><w:t xml:space="preserve">first </w:t></w:r><w:r><w:t>item &amp; more</w:t></w:r></w:p>
<w:tbl><w:tr><w:tc><w:p><w:r><w:t>A1</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>B1</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
<w:p><w:r><w:t>a</w:t><w:tab/><w:t>b</w:t><w:br/><w:t>c</w:t></w:r><w:del><w:r><w:delText>gone</w:delText></w:r></w:del></w:p>
</w:body></w:document>"#
        );
        let blocks = parse_str(&xml).unwrap();
        let got: Vec<_> = blocks
            .iter()
            .map(|b| (b.paragraph, b.role, b.rtl, b.text.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, Role::Heading { level: 1 }, true, "السياسة"),
                (2, Role::ListItem, false, "• first item & more"),
                (3, Role::TableRow, false, "A1 | B1"),
                (4, Role::Body, false, "a\tb\nc"),
            ]
        );
    }

    #[test]
    fn deep_nesting_is_refused() {
        let xml = format!("{}{}", "<a>".repeat(10_000), "</a>".repeat(10_000));
        assert!(matches!(
            parse_str(&xml),
            Err(ExtractError::XmlTooDeep { limit: 256 })
        ));
    }

    #[test]
    fn truncated_and_malformed_xml() {
        let xml = format!(r#"<w:document {W}><w:body><w:p><w:r><w:t>x</w:t>"#);
        assert!(matches!(
            parse_str(&xml),
            Err(ExtractError::Malformed { .. })
        ));
        assert!(matches!(
            parse_str("<a><b></a>"),
            Err(ExtractError::Malformed { .. })
        ));
    }
}
