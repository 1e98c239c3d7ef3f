//! OpenAI's list parameters for lists the gateway holds whole (`/v1/files`, `/v1/vector_stores`
//! and a vector store's files): `limit`, `order`, `after`, `before` and an endpoint's own
//! filters checked — anything malformed or unknown a 400 naming the parameter, never ignored —
//! and applied to the list, newest first as the store gives it.

use crate::server::error::ApiError;

/// `asc` (oldest first) or `desc` (newest first, the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Asc,
    Desc,
}

/// A list request's parameters, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    pub limit: usize,
    pub order: Order,
    /// The id the page starts after, or ends before, in the requested order.
    pub after: Option<String>,
    pub before: Option<String>,
    /// The endpoint's own parameters, as given (each at most once).
    pub extra: Vec<(String, String)>,
}

/// How an endpoint's list is paged: OpenAI's bounds for it, and the other parameters it takes.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub max: usize,
    pub default: usize,
    pub extra: &'static [&'static str],
}

impl ListQuery {
    /// The URI's query string (`None`: no `?`) checked against `bounds`.
    pub fn parse(query: Option<&str>, bounds: Bounds) -> Result<ListQuery, ApiError> {
        let mut out = ListQuery {
            limit: bounds.default,
            order: Order::Desc,
            after: None,
            before: None,
            extra: Vec::new(),
        };
        let mut seen: Vec<String> = Vec::new();
        for (k, v) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            if seen.contains(&k.to_string()) {
                return Err(ApiError::invalid(
                    &k,
                    format!("`{k}` is given more than once."),
                ));
            }
            seen.push(k.to_string());
            match &*k {
                "limit" => {
                    out.limit = v
                        .parse::<usize>()
                        .ok()
                        .filter(|n| (1..=bounds.max).contains(n))
                        .ok_or_else(|| {
                            ApiError::invalid(
                                "limit",
                                format!("`limit` must be an integer from 1 to {}.", bounds.max),
                            )
                        })?;
                }
                "order" => {
                    out.order = match &*v {
                        "asc" => Order::Asc,
                        "desc" => Order::Desc,
                        _ => {
                            return Err(ApiError::invalid(
                                "order",
                                "`order` must be `asc` or `desc`.",
                            ));
                        }
                    }
                }
                "after" | "before" if v.is_empty() => {
                    return Err(ApiError::invalid(
                        &k,
                        format!("`{k}` must be an object id from an earlier page."),
                    ));
                }
                "after" => out.after = Some(v.into_owned()),
                "before" => out.before = Some(v.into_owned()),
                other if bounds.extra.contains(&other) => {
                    out.extra.push((other.to_string(), v.into_owned()));
                }
                other => {
                    let mut known = vec!["limit", "order", "after", "before"];
                    known.extend(bounds.extra);
                    return Err(ApiError::invalid(
                        other,
                        format!(
                            "Unknown query parameter `{other}`; this list takes {}.",
                            known.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(out)
    }

    /// One of the endpoint's own parameters.
    pub fn extra(&self, name: &str) -> Option<&str> {
        self.extra
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The page of `newest_first` this query asks for, and whether more follow it; `id` names
    /// an item. An `after` or `before` id the list does not hold gives an empty page.
    pub fn page<T>(&self, mut newest_first: Vec<T>, id: impl Fn(&T) -> &str) -> (Vec<T>, bool) {
        if self.order == Order::Asc {
            newest_first.reverse();
        }
        let items = newest_first;
        let find = |want: &str| items.iter().position(|t| id(t) == want);
        let start = match &self.after {
            Some(a) => match find(a) {
                Some(i) => i + 1,
                None => return (Vec::new(), false),
            },
            None => 0,
        };
        let end = match &self.before {
            Some(b) => match find(b) {
                Some(i) => i,
                None => return (Vec::new(), false),
            },
            None => items.len(),
        };
        if start >= end {
            return (Vec::new(), false);
        }
        // With only `before`, the page is the `limit` items just before it.
        let (from, to) = if self.before.is_some() && self.after.is_none() {
            (end.saturating_sub(self.limit).max(start), end)
        } else {
            (start, end.min(start + self.limit))
        };
        let more = if self.before.is_some() && self.after.is_none() {
            from > start
        } else {
            to < end
        };
        let page = items.into_iter().skip(from).take(to - from).collect();
        (page, more)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    const BOUNDS: Bounds = Bounds {
        max: 100,
        default: 20,
        extra: &["purpose"],
    };

    fn q(s: &str) -> Result<ListQuery, ApiError> {
        ListQuery::parse(Some(s), BOUNDS)
    }

    #[test]
    fn bad_limits_orders_and_unknown_parameters_are_refused_by_name() {
        for (query, param) in [
            ("limit=0", "limit"),
            ("limit=101", "limit"),
            ("limit=-1", "limit"),
            ("limit=ten", "limit"),
            ("limit=", "limit"),
            ("order=newest", "order"),
            ("order=ASC", "order"),
            ("after=", "after"),
            ("limit=5&limit=6", "limit"),
            ("colour=red", "colour"),
        ] {
            let e = q(query).err().unwrap();
            assert_eq!(e.status, http::StatusCode::BAD_REQUEST, "{query}");
            assert_eq!(e.param.as_deref(), Some(param), "{query}");
        }
        let ok = q("limit=100&order=asc&after=b&purpose=batch").unwrap();
        assert_eq!((ok.limit, ok.order), (100, Order::Asc));
        assert_eq!(ok.extra("purpose"), Some("batch"));
        assert_eq!(ListQuery::parse(None, BOUNDS).unwrap().limit, 20);
    }

    #[test]
    fn pages_follow_order_after_and_before() {
        let items = || vec!["e", "d", "c", "b", "a"]; // newest first
        let page = |s: &str| q(s).unwrap().page(items(), |t| t);
        assert_eq!(page("limit=2"), (vec!["e", "d"], true));
        assert_eq!(page("limit=2&after=d"), (vec!["c", "b"], true));
        assert_eq!(page("limit=2&after=b"), (vec!["a"], false));
        assert_eq!(page("limit=2&order=asc"), (vec!["a", "b"], true));
        assert_eq!(
            page("limit=3&order=asc&after=b"),
            (vec!["c", "d", "e"], false)
        );
        assert_eq!(page("limit=2&before=b"), (vec!["d", "c"], true));
        assert_eq!(page("limit=5&before=b"), (vec!["e", "d", "c"], false));
        assert_eq!(page("after=e&before=b"), (vec!["d", "c"], false));
        assert_eq!(page("after=zz"), (vec![], false));
    }
}
