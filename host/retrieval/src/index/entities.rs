//! Document names (issue 50, "the entity rule"): each document may carry a header — its title and
//! the aliases given at upload — whose words are kept under their name keys (`names::word_keys`:
//! the normalised term and the Arabic/Latin consonant skeleton). A query's words are matched
//! against the headers of the searched documents; each matched word counts for the documents it
//! names with an idf over those documents (a word in every header, such as "Bank", counts for
//! little), and a document's share of the query's name evidence (0–1) is added to the fused score
//! of each of its chunks (`SearchOptions::entity_weight`). A chunk deep in a document about one
//! bank is thereby about that bank, in whichever script the question names it.

use std::collections::HashMap;

use crate::names::{arabic_names, candidate_words, word_keys};
use crate::normalize::is_mostly_arabic;

/// Most header words kept per document (a title and a few aliases need far fewer).
pub const MAX_HEADER_WORDS: usize = 64;

/// Where a header key came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Origin {
    /// The header word is Arabic script (a query word in the other script matches it only
    /// through its skeleton: a transliteration).
    arabic: bool,
    /// The header word is a name: from the names given at upload, or an Arabic title's word
    /// right after an organisation noun (`names::arabic_names`).
    name: bool,
}

/// The headers' keys: key → (document, origin), and document → its keys (to replace or remove
/// them).
#[derive(Debug, Clone, Default)]
pub(super) struct Entities {
    by_key: HashMap<Box<str>, Vec<(u32, Origin)>>,
    keys: HashMap<u32, Vec<Box<str>>>,
}

/// What a query's words matched among the searched documents' headers.
#[derive(Debug, Clone, Default)]
pub(super) struct EntityMatch {
    /// Document → its share of the query's name evidence, in (0, 1].
    pub share: HashMap<u32, f32>,
    /// The query's words that counted as name evidence (normalised terms).
    pub words: Vec<String>,
}

impl EntityMatch {
    pub fn share(&self, document: u32) -> f32 {
        self.share.get(&document).copied().unwrap_or(0.0)
    }

    /// The largest share (0 when no query word names a searched document).
    pub fn best(&self) -> f32 {
        self.share.values().copied().fold(0.0, f32::max)
    }

    /// The document the query's names point at: the best one, when it leads the next by at least
    /// half of the evidence (`lead`).
    pub fn leader(&self) -> Option<u32> {
        if self.lead() < 0.5 {
            return None;
        }
        self.first()
    }

    /// The document with the largest share (the smallest id among equals).
    fn first(&self) -> Option<u32> {
        let best = self.best();
        self.share
            .iter()
            .filter(|&(_, &s)| s == best)
            .map(|(&d, _)| d)
            .min()
    }

    /// What the ranking adds for `document` (× `SearchOptions::entity_weight`): the lead of the
    /// document with the largest share, 0 for every other. Words every header has ("Bank", بنك
    /// matching "Bank" across scripts) give several documents the same share and none a lead.
    pub fn boost(&self, document: u32) -> f32 {
        if self.first() == Some(document) {
            self.lead()
        } else {
            0.0
        }
    }

    /// How far the best document's share leads the next one's (the best share itself when only
    /// one document is named): near 1 when the query's names point at one document, 0 when its
    /// only matches are words every header has ("Bank").
    pub fn lead(&self) -> f32 {
        let (mut first, mut second) = (0.0f32, 0.0f32);
        for &s in self.share.values() {
            if s > first {
                second = first;
                first = s;
            } else if s > second {
                second = s;
            }
        }
        first - second
    }
}

impl Entities {
    /// Sets (replaces) a document's header: `title` (its title, file name: words that name the
    /// document only when a query uses them as a name) and `names` (names given at upload, in any
    /// script: always names). Both empty removes it.
    pub fn set(&mut self, document: u32, title: &str, names: &str) {
        self.remove(document);
        let title_names = arabic_names(title);
        let mut keys: Vec<Box<str>> = Vec::new();
        let mut origins: Vec<Origin> = Vec::new();
        let words = candidate_words(title)
            .into_iter()
            .map(|w| {
                let name = title_names.contains(&w);
                (w, name)
            })
            .chain(candidate_words(names).into_iter().map(|w| (w, true)))
            .take(2 * MAX_HEADER_WORDS);
        for (word, name) in words {
            let arabic = is_mostly_arabic(&word);
            for key in word_keys(&word) {
                match keys.iter().position(|k| **k == *key) {
                    Some(i) => origins[i].name |= name,
                    None => {
                        keys.push(key.into());
                        origins.push(Origin { arabic, name });
                    }
                }
            }
        }
        if keys.is_empty() {
            return;
        }
        for (key, origin) in keys.iter().zip(origins) {
            self.by_key
                .entry(key.clone())
                .or_default()
                .push((document, origin));
        }
        self.keys.insert(document, keys);
    }

    pub fn remove(&mut self, document: u32) {
        let Some(keys) = self.keys.remove(&document) else {
            return;
        };
        for key in keys {
            if let Some(docs) = self.by_key.get_mut(&key) {
                docs.retain(|&(d, _)| d != document);
                if docs.is_empty() {
                    self.by_key.remove(&key);
                }
            }
        }
    }

    /// Whether any of `word`'s keys is in the header of a document `searched` accepts.
    pub fn names_a_document(&self, word: &str, searched: &impl Fn(u32) -> bool) -> bool {
        word_keys(word)
            .iter()
            .filter_map(|k| self.by_key.get(k.as_str()))
            .flatten()
            .any(|&(d, _)| searched(d))
    }

    /// Each searched document's share of the query's name evidence: Σ idf of the query words
    /// naming it / Σ idf of the query words naming any searched document, the idf of a word
    /// being BM25's over the searched documents that have a header (a word in every one of
    /// several searched headers does not count). A query word names a
    /// document when one of its keys is in the header and it is used as a name: the header word
    /// is one (`Origin::name`), the query word looks like one (`name_like`, from
    /// `names::name_like_words`: a Latin name is written with a capital), or an Arabic query word
    /// transliterates a Latin header word and is not a word of the searched chunks (`in_text`:
    /// بنك is an Arabic word of an Arabic library, not a transliteration of "Bank"). A topic word
    /// shared with a title ("transfers" in "Wire transfers policy"), or a lowercase Latin word
    /// whose skeleton happens to be an Arabic title word's ("official", فصيلة), is not.
    pub fn match_query(
        &self,
        query: &str,
        name_like: &[String],
        searched: &impl Fn(u32) -> bool,
        in_text: &impl Fn(&str) -> bool,
    ) -> EntityMatch {
        let mut out = EntityMatch::default();
        if self.keys.is_empty() {
            return out;
        }
        let mut words = candidate_words(query);
        words.sort_unstable();
        words.dedup();
        // (the word, documents it names, in how many searched headers it is at all)
        let mut named: Vec<(String, Vec<u32>, usize)> = Vec::new();
        for word in words {
            let (arabic, name) = (is_mostly_arabic(&word), name_like.contains(&word));
            let mut foreign: Option<bool> = None;
            let mut transliteration = || *foreign.get_or_insert_with(|| !in_text(&word));
            let (mut docs, mut present): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
            for &(d, o) in word_keys(&word)
                .iter()
                .filter_map(|k| self.by_key.get(k.as_str()))
                .flatten()
            {
                if !searched(d) {
                    continue;
                }
                present.push(d);
                if name || o.name || (arabic && !o.arabic && transliteration()) {
                    docs.push(d);
                }
            }
            docs.sort_unstable();
            docs.dedup();
            present.sort_unstable();
            present.dedup();
            if !docs.is_empty() {
                named.push((word, docs, present.len()));
            }
        }
        if named.is_empty() {
            return out;
        }
        // Counted only now: most queries name no document.
        let n = self.keys.keys().filter(|&&d| searched(d)).count();
        // A word of every searched header ("Bank" in each bank's title or aliases) tells them
        // apart no more than a word of none.
        named.retain(|(_, _, df)| *df < n || n == 1);
        let n = n as f32;
        let mut total = 0.0;
        for (word, docs, df) in named {
            out.words.push(word);
            // The idf counts every header the word is in, named by it or not.
            let df = df as f32;
            let idf = (1.0 + (n - df + 0.5).max(0.0) / (df + 0.5)).ln();
            total += idf;
            for d in docs {
                *out.share.entry(d).or_default() += idf;
            }
        }
        if total > 0.0 {
            for s in out.share.values_mut() {
                *s /= total;
            }
        }
        out
    }

    pub fn memory_bytes(&self) -> usize {
        let keys: usize = self
            .keys
            .values()
            .flatten()
            .map(|k| 2 * (k.len() + 16) + 4)
            .sum();
        keys + self.keys.len() * 32 + self.by_key.len() * 48
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Entities {
        fn match_query_(&self, query: &str, searched: &impl Fn(u32) -> bool) -> EntityMatch {
            let in_text = |w: &str| ["bank", "card", "بنك"].contains(&w);
            self.match_query(
                query,
                &crate::names::name_like_words(query),
                searched,
                &in_text,
            )
        }
    }

    fn library() -> Entities {
        let mut e = Entities::default();
        e.set(0, "Northgate Bank — Retail Banking Terms", "");
        e.set(1, "Harbor Trust Bank — Customer Terms", "");
        e.set(2, "بنك الوفاق — شروط الخدمات", "Al Wefaq Bank");
        e.set(3, "مصرف الراسخ — دليل العملاء", "");
        e.set(4, "Wire transfers policy", "");
        e
    }

    #[test]
    fn a_transliterated_name_gives_its_document_the_largest_share() {
        let e = library();
        let all = |_: u32| true;
        let m = e.match_query_("What does Al-Wifaq Bank charge for a new card?", &all);
        assert!(m.share(2) > 0.7, "{m:?}");
        assert!(m.share(0) < 0.3 && m.share(1) < 0.3, "{m:?}");
        let m = e.match_query_("كم رسوم البطاقة في بنك نورث غيت؟", &all);
        assert!(e.match_query_("نورثغيت", &all).share(0) > 0.99);
        assert!(m.best() == m.share(0), "{m:?}");
        let m = e.match_query_("How fast does Masraf Al-Rasekh answer complaints?", &all);
        assert!(m.share(3) > 0.9, "{m:?}");
    }

    #[test]
    fn only_searched_documents_count_and_removal_forgets() {
        let mut e = library();
        let not_two = |d: u32| d != 2;
        assert_eq!(e.match_query_("Al Wefaq", &not_two).best(), 0.0);
        e.remove(2);
        assert_eq!(e.match_query_("Al Wefaq", &|_| true).best(), 0.0);
        assert!(!e.names_a_document("wefaq", &|_| true));
        assert!(e.names_a_document("northgate", &|_| true));
    }

    #[test]
    fn a_query_naming_no_document_matches_nothing() {
        let e = library();
        let m = e.match_query_("What is the fee at Eastbridge?", &|_| true);
        assert!(m.share.is_empty(), "{m:?}");
        // A topic word of a title is not a name.
        let m = e.match_query_("What is the cut-off for same-day transfers?", &|_| true);
        assert!(m.share.is_empty(), "{m:?}");
        // An Arabic title's word after an organisation noun is one, even in a lowercase query.
        let m = e.match_query_("متى يصبح الحساب راكدا في الوفاق؟", &|_| true);
        assert!(m.share(2) > 0.99, "{m:?}");
        // "Bank" is in three headers: each holds all of the (little) evidence, none leads.
        let m = e.match_query_("What is the fee at Eastbridge Bank?", &|_| true);
        assert_eq!(m.best(), 1.0);
        assert!(m.lead() < 0.01, "{m:?}");
        let m = e.match_query_("What does Northgate Bank charge?", &|_| true);
        assert!(m.lead() > 0.5, "{m:?}");
    }
}
