//! The shape of the names an operator gives the gateway, wherever they come from (the config
//! file, the admin API): model ids and region names. They reach logs, metrics labels, headers
//! (`X-Data-Residency`), the journal and the console, so white space, control characters and
//! bidirectional overrides are refused with a message that says what is allowed.

/// Longest model id (Hugging Face's `org/name` ids are well under it).
pub const MAX_MODEL_ID: usize = 128;
/// Longest region name.
pub const MAX_REGION: usize = 64;

/// A model id: 1–128 ASCII letters, digits and `.` `_` `-` `:` `/` `@` `+` (`qwen2.5-coder-32b`,
/// `meta-llama/Llama-3.1-8B-Instruct`, `llama3.2:3b`).
pub fn check_model_id(id: &str) -> Result<(), String> {
    let ok = (1..=MAX_MODEL_ID).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-:/@+".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "must be 1 to {MAX_MODEL_ID} ASCII letters, digits and . _ - : / @ + (such as qwen2.5-coder-32b), got {}",
            shown(id)
        ))
    }
}

/// A region name: 1–64 ASCII letters, digits and `.` `_` `-` (`sa-riyadh-1`).
pub fn check_region(region: &str) -> Result<(), String> {
    let ok = (1..=MAX_REGION).contains(&region.len())
        && region
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "must be 1 to {MAX_REGION} ASCII letters, digits and . _ - (such as sa-riyadh-1), got {}",
            shown(region)
        ))
    }
}

/// A refused name as an error message may show it: escaped, and cut short.
fn shown(name: &str) -> String {
    let cut: String = name.chars().take(40).collect();
    let more = if cut.len() < name.len() { "…" } else { "" };
    format!("{:?}{more}", cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_and_regions_in_use_are_accepted() {
        for id in [
            "jais-30b-chat",
            "qwen2.5-coder-32b",
            "meta-llama/Llama-3.1-8B-Instruct",
            "llama3.2:3b",
            "org/model@rev+q4",
            &"m".repeat(MAX_MODEL_ID),
        ] {
            assert_eq!(check_model_id(id), Ok(()), "{id}");
        }
        for region in [
            "sa-riyadh-1",
            "eu-frankfurt-1",
            "EU_West.2",
            &"r".repeat(MAX_REGION),
        ] {
            assert_eq!(check_region(region), Ok(()), "{region}");
        }
    }

    #[test]
    fn white_space_controls_bidi_overrides_and_length_are_refused() {
        for bad in [
            "",
            "has space",
            "tab\tbed",
            "new\nline",
            "evil\u{202e}live",
            "نموذج",
            "a;b",
            "a\"b",
            &"m".repeat(MAX_MODEL_ID + 1),
        ] {
            let e = check_model_id(bad).unwrap_err();
            assert!(e.starts_with("must be 1 to 128"), "{bad}: {e}");
            assert!(
                !e.contains('\u{202e}') && !e.contains('\n'),
                "shown escaped: {e}"
            );
        }
        for bad in [
            "",
            "sa riyadh",
            "eu/west",
            "r\u{202e}",
            &"r".repeat(MAX_REGION + 1),
        ] {
            assert!(check_region(bad).is_err(), "{bad}");
        }
    }
}
