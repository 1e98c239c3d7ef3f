//! The web console (issue 20): its static assets (`host/console/`), embedded in the binary and
//! served at `/console/` without authentication — they are public code; every byte of data comes
//! from the public API, called by the browser with the signed-in key as its bearer header. Format
//! and decisions in `docs/CONSOLE.md`.

use axum::extract::Path;
use axum::response::{IntoResponse, Redirect, Response};
use http::{HeaderName, HeaderValue, header};

use crate::server::error::ApiError;

/// One embedded file: its path under `/console/`, its content type, its bytes.
#[derive(Debug)]
pub struct Asset {
    pub path: &'static str,
    pub content_type: &'static str,
    pub bytes: &'static [u8],
}

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

macro_rules! asset {
    ($path:literal, $content_type:expr) => {
        Asset {
            path: $path,
            content_type: $content_type,
            bytes: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/console/", $path)),
        }
    };
}

/// Every file of the console. A new file is one line here (the unit test below fails on a file
/// `index.html` or a module imports that is missing from the table).
pub static ASSETS: &[Asset] = &[
    asset!("index.html", HTML),
    asset!("style.css", CSS),
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("ui.js", JS),
    asset!("chart.js", JS),
    asset!("verify.js", JS),
    asset!("pages/teams.js", JS),
    asset!("pages/usage.js", JS),
    asset!("pages/journal.js", JS),
    asset!("pages/policies.js", JS),
    asset!("pages/documents.js", JS),
    asset!("pages/webhooks.js", JS),
    asset!("pages/health.js", JS),
    asset!("pages/mcp.js", JS),
];

/// The headers on every console response: a strict CSP (own scripts, styles and API only; no
/// inline script, no framing), no sniffing, no referrer, revalidate on each load.
const SECURITY_HEADERS: &[(&str, &str)] = &[
    (
        "content-security-policy",
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    ),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-cache"),
];

fn find(path: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.path == path)
}

fn secured(mut res: Response) -> Response {
    let headers = res.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    res
}

fn serve(asset: &'static Asset) -> Response {
    secured(([(header::CONTENT_TYPE, asset.content_type)], asset.bytes).into_response())
}

/// `GET /console`: to `/console/`, so the page's relative module paths resolve under it.
pub async fn redirect() -> Response {
    secured(Redirect::permanent("/console/").into_response())
}

/// `GET /console/`: the page.
pub async fn index() -> Response {
    match find("index.html") {
        Some(asset) => serve(asset),
        None => not_found("index.html"),
    }
}

/// `GET /console/{*path}`: an embedded file, or 404 in the API's error shape.
pub async fn asset(Path(path): Path<String>) -> Response {
    match find(&path) {
        Some(asset) => serve(asset),
        None => not_found(&path),
    }
}

fn not_found(path: &str) -> Response {
    secured(ApiError::not_found(format!("Unknown console file `{path}`.")).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(asset: &Asset) -> &'static str {
        std::str::from_utf8(asset.bytes).unwrap()
    }

    /// Relative references (`src`, `href`, `import … from`) in a file, resolved against its
    /// directory; absolute URLs and the API's paths are not files.
    fn references(asset: &Asset) -> Vec<String> {
        let body = text(asset);
        let dir = asset.path.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        let mut out = Vec::new();
        for marker in ["src=\"", "href=\"", "from '", "import('"] {
            for piece in body.split(marker).skip(1) {
                let end = piece.find(['"', '\'']).unwrap();
                let target = &piece[..end];
                if target.starts_with("data:") || target.starts_with('#') || target.is_empty() {
                    continue;
                }
                out.push(resolve(dir, target));
            }
        }
        out
    }

    fn resolve(dir: &str, target: &str) -> String {
        let mut parts: Vec<&str> = if dir.is_empty() {
            Vec::new()
        } else {
            dir.split('/').collect()
        };
        for seg in target.split('/') {
            match seg {
                "." => {}
                ".." => {
                    parts.pop();
                }
                s => parts.push(s),
            }
        }
        parts.join("/")
    }

    #[test]
    fn every_asset_has_a_content_type_matching_its_extension() {
        for a in ASSETS {
            let want = match a.path.rsplit_once('.').map(|(_, e)| e) {
                Some("html") => HTML,
                Some("js") => JS,
                Some("css") => CSS,
                other => panic!("{}: no content type for extension {other:?}", a.path),
            };
            assert_eq!(a.content_type, want, "{}", a.path);
            assert!(!a.bytes.is_empty(), "{} is empty", a.path);
        }
        let mut paths: Vec<_> = ASSETS.iter().map(|a| a.path).collect();
        paths.sort_unstable();
        paths.dedup();
        assert_eq!(paths.len(), ASSETS.len(), "a path is listed twice");
    }

    #[test]
    fn index_and_modules_reference_only_embedded_files() {
        for a in ASSETS
            .iter()
            .filter(|a| a.path.ends_with(".html") || a.path.ends_with(".js"))
        {
            for target in references(a) {
                assert!(
                    find(&target).is_some(),
                    "{} references `{target}`, which is not embedded",
                    a.path
                );
            }
        }
        let index = text(find("index.html").unwrap());
        assert!(index.contains("src=\"app.js\""), "index.html loads app.js");
        assert!(
            !index.contains("http://") && !index.contains("https://"),
            "no CDN"
        );
        assert!(
            !index.contains("<script>"),
            "no inline script (the CSP forbids it)"
        );
    }

    #[tokio::test]
    async fn assets_carry_the_security_headers_and_unknown_files_404() {
        let res = asset(Path("app.js".to_owned())).await;
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()[header::CONTENT_TYPE], JS);
        for (name, value) in SECURITY_HEADERS {
            assert_eq!(res.headers()[*name], *value, "{name}");
        }
        let res = asset(Path("nope.js".to_owned())).await;
        assert_eq!(res.status(), 404);
        assert!(res.headers().contains_key("content-security-policy"));
        let res = redirect().await;
        assert_eq!(res.status(), 308);
        assert_eq!(res.headers()[header::LOCATION], "/console/");
    }
}
