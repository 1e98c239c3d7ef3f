//! One upstream MCP server, whatever its transport (`Link`: Streamable HTTP in `streamable.rs`, a
//! child process over stdio in `stdio.rs`): its tool list cached for the list's time to live
//! (every page read), a failed listing remembered for a moment, and every request under its
//! deadline. The transports answer one JSON-RPC request each; everything above is shared.

use std::sync::Mutex as StdMutex;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::failure::UpstreamError;
use super::stdio::StdioLink;
use super::streamable::HttpLink;

/// After a failed listing, callers are answered from that failure for this long, so a server
/// that is down does not hold every `tools/list` of its teams for its deadline.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(2);

/// Timings of one upstream.
#[derive(Debug, Clone, Copy)]
pub struct Deadlines {
    pub call: Duration,
    pub list: Duration,
    pub list_ttl: Duration,
}

/// How the gateway reaches a server.
pub enum Link {
    Http(Box<HttpLink>),
    Stdio(StdioLink),
}

pub struct Upstream {
    link: Link,
    deadlines: Deadlines,
    tools: StdMutex<Option<(Instant, Arc<Vec<Value>>)>>,
    /// The last failed listing: when, and why.
    failed: StdMutex<Option<(Instant, String)>>,
}

impl Upstream {
    pub fn new(link: Link, deadlines: Deadlines) -> Upstream {
        Upstream {
            link,
            deadlines,
            tools: StdMutex::new(None),
            failed: StdMutex::new(None),
        }
    }

    pub fn link(&self) -> &Link {
        &self.link
    }

    /// The server's tools, as it lists them (every page), reused for the list's time to live;
    /// a failure is remembered for [`RETRY_AFTER_FAILURE`].
    pub async fn tools(&self) -> Result<Arc<Vec<Value>>, UpstreamError> {
        if let Some((at, tools)) = &*self.tools.lock().unwrap_or_else(PoisonError::into_inner)
            && at.elapsed() < self.deadlines.list_ttl
        {
            return Ok(tools.clone());
        }
        if let Some((at, why)) = &*self.failed.lock().unwrap_or_else(PoisonError::into_inner)
            && at.elapsed() < RETRY_AFTER_FAILURE
        {
            return Err(UpstreamError::Unavailable(why.clone()));
        }
        let listed = self.list_all().await;
        let mut failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        match &listed {
            Ok(_) => *failed = None,
            Err(e) => *failed = Some((Instant::now(), e.to_string())),
        }
        listed
    }

    async fn list_all(&self) -> Result<Arc<Vec<Value>>, UpstreamError> {
        let all = self.list("tools/list", "tools").await?;
        let tools: Arc<Vec<Value>> = Arc::new(
            all.into_iter()
                .filter(|t| t.get("name").and_then(Value::as_str).is_some())
                .collect(),
        );
        *self.tools.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((Instant::now(), tools.clone()));
        Ok(tools)
    }

    /// `tools/call` of the server's own tool `name`, under the call deadline.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, UpstreamError> {
        let params = json!({ "name": name, "arguments": arguments });
        self.request("tools/call", params, Some(name), self.deadlines.call)
            .await
    }

    /// Every page of a list method (`tools/list`, `prompts/list`, `resources/list`, …): the
    /// items under `field`, under the list deadline each page.
    pub async fn list(&self, method: &str, field: &str) -> Result<Vec<Value>, UpstreamError> {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        // A bounded number of pages: a server cannot keep the gateway listing forever.
        for _ in 0..20 {
            let params = match &cursor {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let page = self
                .request(method, params, None, self.deadlines.list)
                .await?;
            let items = page
                .get(field)
                .and_then(Value::as_array)
                .ok_or_else(|| UpstreamError::Malformed(format!("{method} without {field}")))?;
            all.extend(items.iter().filter(|i| i.is_object()).cloned());
            cursor = page
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_string);
            if cursor.is_none() {
                break;
            }
        }
        Ok(all)
    }

    /// One request (`prompts/get`, `resources/read`, …) under the call deadline; `name` is the
    /// `Mcp-Name` a modern HTTP server is told.
    pub async fn call(
        &self,
        method: &str,
        params: Value,
        name: Option<&str>,
    ) -> Result<Value, UpstreamError> {
        self.request(method, params, name, self.deadlines.call)
            .await
    }

    async fn request(
        &self,
        method: &str,
        params: Value,
        name: Option<&str>,
        deadline: Duration,
    ) -> Result<Value, UpstreamError> {
        match &self.link {
            Link::Http(h) => h.request(method, params, name, deadline).await,
            Link::Stdio(s) => s.request(method, params, deadline).await,
        }
    }
}
