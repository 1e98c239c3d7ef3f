//! Asking a target whether it really serves: its first chat completion (readiness is a 200 with a
//! chat completion in it, not an open port; a `message` on the Messages row), the guardrail's
//! refusal of a card number, and the
//! admin API calls that give Sovereign's team its budget and read its spend afterwards.

use std::time::{Duration, Instant};

use anyhow::bail;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use serde_json::{Value, json};

use super::{Running, messages};
use crate::load::{HttpClient, Target};

/// Sends the target's request until it answers 200 with a chat completion; fails when the
/// process exits, when it answers nothing else for 10 s, or after `within`.
pub(super) async fn ready(
    client: &HttpClient,
    target: &Target,
    running: &mut Running,
    within: Duration,
) -> anyhow::Result<String> {
    let start = Instant::now();
    let mut answering_since: Option<Instant> = None;
    let is_messages = target.uri.path() == messages::PATH;
    let shape = if is_messages {
        "message"
    } else {
        "chat.completion"
    };
    let recognise = |json: &Value| {
        if is_messages {
            messages::message(json)
        } else {
            chat_completion(json)
        }
    };
    loop {
        running.check_alive()?;
        let (answered, why) = match exchange(client, target.request()?).await {
            Ok((200, headers, json)) => match recognise(&json) {
                Ok(model) => {
                    let route = headers
                        .get("x-route-policy")
                        .and_then(|v| v.to_str().ok())
                        .map(|p| format!(", X-Route-Policy {p}"))
                        .unwrap_or_default();
                    return Ok(format!("200 {shape} from {model}{route}"));
                }
                Err(e) => (true, e),
            },
            Ok((status, _, json)) => (true, format!("status {status}: {json}")),
            Err(e) => (false, e),
        };
        let wrong_for = if answered {
            answering_since.get_or_insert_with(Instant::now).elapsed()
        } else {
            answering_since = None;
            Duration::ZERO
        };
        if start.elapsed() >= within || wrong_for >= Duration::from_secs(10) {
            bail!(
                "no {shape} after {:.0} s; last: {why}",
                start.elapsed().as_secs_f64()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The answer's model, if `json` is a chat completion with some text.
pub(super) fn chat_completion(json: &Value) -> Result<String, String> {
    let text = json
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .unwrap_or("");
    if json["object"] != "chat.completion" || text.is_empty() {
        return Err(format!("200 but not a chat completion: {json}"));
    }
    Ok(json["model"].as_str().unwrap_or("?").to_string())
}

/// The all-policies gateway refuses a card number (the guardrail is on the path).
pub(super) async fn pii_refused(client: &HttpClient, target: &Target) -> anyhow::Result<()> {
    let mut card = target.clone();
    // The same body on both routes: `max_tokens` and a string content are valid in both shapes.
    card.body = Bytes::from(serde_json::to_vec(&json!({
        "model": "auto-router",
        "messages": [{"role": "user", "content": "my card is 4111 1111 1111 1111"}],
        "max_tokens": 16,
    }))?);
    match exchange(client, card.request()?).await {
        Ok((400, _, json)) if json.pointer("/error/code") == Some(&json!("pii_detected")) => Ok(()),
        Ok((400, _, json)) if messages::refused(&json) => Ok(()),
        Ok((status, _, json)) => bail!("the guardrail let a card number through: {status} {json}"),
        Err(e) => bail!("checking the guardrail: {e}"),
    }
}

/// An admin API call; the answer's JSON.
pub(super) async fn admin(
    client: &HttpClient,
    secret: &str,
    method: &str,
    url: &str,
    body: Option<Value>,
) -> anyhow::Result<Value> {
    let body = match body {
        Some(b) => Bytes::from(serde_json::to_vec(&b)?),
        None => Bytes::new(),
    };
    let req = Request::builder()
        .method(method)
        .uri(url)
        .header("authorization", format!("Bearer {secret}"))
        .header("content-type", "application/json")
        .body(Full::new(body))?;
    match exchange(client, req).await {
        Ok((200, _, json)) => Ok(json),
        Ok((status, _, json)) => bail!("{method} {url}: {status} {json}"),
        Err(e) => bail!("{method} {url}: {e}"),
    }
}

/// One request under a 10 s deadline: status, headers and the body as JSON (a string if it is
/// not JSON). `Err` when nothing answered.
pub(super) async fn exchange(
    client: &HttpClient,
    req: Request<Full<Bytes>>,
) -> Result<(u16, hyper::HeaderMap, Value), String> {
    let answer = async {
        let res = client.request(req).await.map_err(|e| format!("{e:?}"))?;
        let (parts, body) = res.into_parts();
        let bytes = body
            .collect()
            .await
            .map_err(|e| format!("reading body: {e}"))?
            .to_bytes();
        let json = serde_json::from_slice(&bytes).unwrap_or_else(|_| {
            Value::String(String::from_utf8_lossy(&bytes).chars().take(300).collect())
        });
        Ok((parts.status.as_u16(), parts.headers, json))
    };
    tokio::time::timeout(Duration::from_secs(10), answer)
        .await
        .unwrap_or_else(|_| Err("no answer within 10 s".into()))
}
