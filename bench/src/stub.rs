//! `--upstream stub`: a minimal OpenAI-compatible upstream (plain hyper, HTTP/1.1, keep-alive,
//! `TCP_NODELAY`) that answers every chat completion at once with a canned answer of the
//! simulator's shape — no timers, no logging, no routing. It runs as a child process
//! (`sovereign-bench --stub-listen ADDR`) like the simulator, and exists because a 0 ms upstream
//! must not wait on a timer: see bench/README.md ("The simulator's timer floor"). It also serves
//! `/mcp`, a 2026-07-28 (stateless) MCP server with one `echo` tool, for `--mcp-compare`
//! (`mcp.rs`), and counts the tool calls it answered (`GET /_stub/mcp_calls`).

use std::convert::Infallible;
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

const TOKENS: [&str; 8] = [
    "Hello!",
    " I",
    " am",
    " a",
    " stub",
    " upstream",
    " for",
    " benchmarks.",
];

pub fn serve(listen: SocketAddr) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = TcpListener::bind(listen).await?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on http://{}", listener.local_addr()?)?;
        out.flush()?;
        drop(out);
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let _ = http1::Builder::new()
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(stream), service_fn(handle))
                    .await;
            });
        }
    })
}

/// The stub's whole (not streamed) answer for `model`; the peers bench's nginx upstream serves
/// the same text.
pub fn chat_completion(model: &str) -> Value {
    json!({
        "id": "stub-1", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": TOKENS.concat()},
                     "finish_reason": "stop", "logprobs": null}],
        "usage": usage(),
    })
}

fn usage() -> Value {
    json!({"prompt_tokens": 2, "completion_tokens": TOKENS.len(), "total_tokens": 2 + TOKENS.len()})
}

/// `tools/call` requests `/mcp` answered.
static MCP_CALLS: AtomicU64 = AtomicU64::new(0);

/// The MCP protocol revision `/mcp` speaks (stateless: no `initialize`, no session).
const MCP_MODERN: &str = "2026-07-28";

async fn handle(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_string();
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    match path.as_str() {
        "/mcp" => return Ok(json_response(mcp(&request))),
        "/_stub/mcp_calls" => {
            return Ok(json_response(
                json!({"calls": MCP_CALLS.load(Ordering::Relaxed)}),
            ));
        }
        _ => {}
    }
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("stub");
    let usage = usage();
    let (content_type, bytes) = if request.get("stream") == Some(&Value::Bool(true)) {
        let chunk = |delta: Value, finish: Option<&str>| {
            json!({"id": "stub-1", "object": "chat.completion.chunk", "created": 0, "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        };
        let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
        events.extend(TOKENS.iter().map(|t| chunk(json!({"content": t}), None)));
        events.push(chunk(json!({}), Some("stop")));
        if request.pointer("/stream_options/include_usage") == Some(&Value::Bool(true)) {
            events.push(
                json!({"id": "stub-1", "object": "chat.completion.chunk", "created": 0,
                               "model": model, "choices": [], "usage": usage}),
            );
        }
        let mut text = String::new();
        for e in events {
            text.push_str("data: ");
            text.push_str(&e.to_string());
            text.push_str("\n\n");
        }
        text.push_str("data: [DONE]\n\n");
        ("text/event-stream", Bytes::from(text))
    } else {
        (
            "application/json",
            Bytes::from(chat_completion(model).to_string()),
        )
    };
    let mut response = Response::new(Full::new(bytes));
    *response.status_mut() = StatusCode::OK;
    if let Ok(v) = content_type.parse() {
        response.headers_mut().insert("content-type", v);
    }
    Ok(response)
}

/// One JSON-RPC request to `/mcp`: `server/discover`, `tools/list`, or `tools/call` of `echo`
/// (its `text` argument back as the result's one text block).
fn mcp(request: &Value) -> Value {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let result = match request.get("method").and_then(Value::as_str) {
        Some("server/discover") => json!({
            "supportedVersions": [MCP_MODERN],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "sovereign-bench-stub", "version": "1"},
        }),
        Some("tools/list") => json!({"tools": [{
            "name": "echo",
            "description": "Returns its text.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        }]}),
        Some("tools/call") => {
            MCP_CALLS.fetch_add(1, Ordering::Relaxed);
            let text = request
                .pointer("/params/arguments/text")
                .and_then(Value::as_str)
                .unwrap_or("");
            json!({"content": [{"type": "text", "text": text}], "isError": false})
        }
        _ => {
            return json!({"jsonrpc": "2.0", "id": id,
                          "error": {"code": -32601, "message": "method not found"}});
        }
    };
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn json_response(body: Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    if let Ok(v) = "application/json".parse() {
        response.headers_mut().insert("content-type", v);
    }
    response
}
