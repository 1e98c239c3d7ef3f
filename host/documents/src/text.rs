//! Plain text and Markdown: UTF-8 decoded, normalised, split into paragraphs at blank lines
//! (Markdown headings become their own heading blocks).

use crate::normalize::{mostly_rtl, normalize};
use crate::{Block, Document, ExtractError, Kind, Limits, Role};

/// A Markdown ATX heading (`# Title` … `###### Title`): its level and text.
fn heading(line: &str) -> Option<(u8, &str)> {
    let trimmed = line.trim_start();
    let hashes = trimmed.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &trimmed[hashes..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    let text = rest.trim().trim_end_matches('#').trim_end();
    Some((hashes as u8, text))
}

pub(crate) fn extract(bytes: &[u8], kind: Kind, limits: &Limits) -> Result<Document, ExtractError> {
    let body = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let text = std::str::from_utf8(body).map_err(|e| {
        ExtractError::malformed(format!(
            "the text is not valid UTF-8 (at byte {}); save it as UTF-8",
            e.valid_up_to()
        ))
    })?;
    let text = normalize(text);
    limits.check_text(text.chars().count() as u64)?;

    let mut blocks = Vec::new();
    let mut paragraph = String::new();
    let push = |blocks: &mut Vec<Block>, text: &str, role: Role| {
        let text = text.trim_matches('\n');
        if text.trim().is_empty() {
            return;
        }
        blocks.push(Block {
            page: None,
            paragraph: blocks.len() as u32 + 1,
            role,
            rtl: mostly_rtl(text),
            text: text.to_owned(),
        });
    };
    for line in text.split('\n') {
        let md_heading = if kind == Kind::Markdown {
            heading(line)
        } else {
            None
        };
        if let Some((level, title)) = md_heading {
            push(&mut blocks, &paragraph, Role::Body);
            paragraph.clear();
            push(&mut blocks, title, Role::Heading { level });
        } else if line.trim().is_empty() {
            push(&mut blocks, &paragraph, Role::Body);
            paragraph.clear();
        } else {
            if !paragraph.is_empty() {
                paragraph.push('\n');
            }
            paragraph.push_str(line);
        }
    }
    push(&mut blocks, &paragraph, Role::Body);
    Ok(Document {
        kind,
        pages: None,
        blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_split_at_blank_lines_markdown_headings_kept() {
        let md = "# عنوان\r\nالفقرة الأولى.\nسطر ثان.\n\n\n## Second #\ntext\n";
        let doc = extract(md.as_bytes(), Kind::Markdown, &Limits::default());
        let doc = doc.unwrap();
        let got: Vec<_> = doc
            .blocks
            .iter()
            .map(|b| (b.paragraph, b.role, b.rtl, b.text.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, Role::Heading { level: 1 }, true, "عنوان"),
                (2, Role::Body, true, "الفقرة الأولى.\nسطر ثان."),
                (3, Role::Heading { level: 2 }, false, "Second"),
                (4, Role::Body, false, "text"),
            ]
        );
    }

    #[test]
    fn invalid_utf8_and_text_cap() {
        let err = extract(b"ok \xff", Kind::Text, &Limits::default());
        assert!(matches!(err, Err(ExtractError::Malformed { .. })));
        let l = Limits {
            max_text_chars: 3,
            ..Limits::default()
        };
        assert!(matches!(
            extract(b"four", Kind::Text, &l),
            Err(ExtractError::TextTooLong { .. })
        ));
    }
}
