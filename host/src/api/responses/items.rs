//! The Responses API's items: a chat answer's first choice as `output` items, their ids (which
//! name their response, so an `item_reference` finds it), stored turns turned back into chain
//! messages or into the input items `input_items` lists, and `usage`.

use serde_json::{Value, json};

/// A chat answer's first choice → `output` items, and the response's status: `completed`, or
/// `incomplete` when the length limit cut it.
pub fn output_items(answer: &Value, ids: &mut ItemIds) -> (Vec<Value>, &'static str) {
    let choice = answer.pointer("/choices/0").cloned().unwrap_or(Value::Null);
    let message = &choice["message"];
    let text = message["content"].as_str().unwrap_or_default();
    let mut out = Vec::new();
    if !text.is_empty() || message["tool_calls"].as_array().is_none_or(Vec::is_empty) {
        out.push(message_item(&ids.next("msg"), text, "completed"));
    }
    for tc in message["tool_calls"].as_array().into_iter().flatten() {
        out.push(function_call_item(
            &ids.next("fc"),
            tc["id"].as_str().unwrap_or_default(),
            tc.pointer("/function/name")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            tc.pointer("/function/arguments")
                .and_then(Value::as_str)
                .unwrap_or("{}"),
            "completed",
        ));
    }
    let status = if choice["finish_reason"] == "length" {
        "incomplete"
    } else {
        "completed"
    };
    (out, status)
}

pub fn message_item(id: &str, text: &str, status: &str) -> Value {
    json!({
        "id": id, "type": "message", "status": status, "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}]
    })
}

pub fn function_call_item(
    id: &str,
    call_id: &str,
    name: &str,
    arguments: &str,
    status: &str,
) -> Value {
    json!({
        "id": id, "type": "function_call", "status": status,
        "call_id": call_id, "name": name, "arguments": arguments
    })
}

/// Item ids of one response: output items `msg_<response>_<n>`, `fc_<response>_<n>`; input
/// items `msg_<response>_in<n>`, `fco_<response>_in<n>` (never the same as an output's).
pub struct ItemIds {
    base: String,
    scope: &'static str,
    next: usize,
}

impl ItemIds {
    /// Ids of a response's output items.
    pub fn new(response_id: &str) -> ItemIds {
        ItemIds {
            base: response_id.trim_start_matches("resp_").to_string(),
            scope: "",
            next: 0,
        }
    }

    /// Ids of a response's input items.
    pub fn input(response_id: &str) -> ItemIds {
        ItemIds {
            scope: "in",
            ..ItemIds::new(response_id)
        }
    }

    pub fn next(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}_{}_{}{}", self.base, self.scope, self.next)
    }
}

/// The response an item id belongs to (`msg_<base>_<n>` → `resp_<base>`), when it is one of this
/// gateway's.
pub fn response_of_item(item_id: &str) -> Option<String> {
    let (_, rest) = item_id.split_once('_')?;
    let (base, n) = rest.rsplit_once('_')?;
    let n = n.strip_prefix("in").unwrap_or(n);
    (!base.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .then(|| format!("resp_{base}"))
}

/// A stored response's `output` → chat messages, for the next turn of its chain.
pub fn output_messages(output: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut calls = Vec::new();
    for item in output {
        match item["type"].as_str() {
            Some("message") => {
                for part in item["content"].as_array().into_iter().flatten() {
                    if let Some(t) = part["text"].as_str() {
                        text.push_str(t);
                    }
                }
            }
            Some("function_call") => calls.push(json!({
                "id": item["call_id"], "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]}
            })),
            _ => {}
        }
    }
    if !text.is_empty() || !calls.is_empty() {
        let mut m = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::String(text) }});
        if !calls.is_empty() {
            m["tool_calls"] = Value::Array(calls);
        }
        out.push(m);
    }
    out
}

/// Stored chat messages → the input items `GET /v1/responses/{id}/input_items` lists.
pub fn input_items(response_id: &str, messages: &[Value]) -> Vec<Value> {
    let mut ids = ItemIds::input(response_id);
    let mut out = Vec::new();
    for m in messages {
        match m["role"].as_str() {
            Some("tool") => out.push(json!({
                "id": ids.next("fco"), "type": "function_call_output",
                "call_id": m["tool_call_id"], "output": m["content"], "status": "completed"
            })),
            Some(role) => {
                let kind = if role == "assistant" {
                    "output_text"
                } else {
                    "input_text"
                };
                let content: Vec<Value> = match &m["content"] {
                    Value::String(s) => vec![json!({"type": kind, "text": s})],
                    Value::Array(parts) => parts
                        .iter()
                        .map(|p| match p["type"].as_str() {
                            Some("image_url") => {
                                json!({"type": "input_image", "image_url": p.pointer("/image_url/url")})
                            }
                            _ => json!({"type": kind, "text": p["text"]}),
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                if !content.is_empty() {
                    out.push(json!({
                        "id": ids.next("msg"), "type": "message", "role": role,
                        "status": "completed", "content": content
                    }));
                }
                for tc in m["tool_calls"].as_array().into_iter().flatten() {
                    out.push(json!({
                        "id": ids.next("fc"), "type": "function_call", "status": "completed",
                        "call_id": tc["id"], "name": tc.pointer("/function/name"),
                        "arguments": tc.pointer("/function/arguments")
                    }));
                }
            }
            None => {}
        }
    }
    out
}

/// The `usage` of a response from a chat usage object.
pub fn usage(chat: &Value) -> Value {
    let input = chat["prompt_tokens"].as_u64().unwrap_or(0);
    let output = chat["completion_tokens"].as_u64().unwrap_or(0);
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + output
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_ids_name_their_response() {
        let mut ids = ItemIds::new("resp_abc123");
        assert_eq!(
            response_of_item(&ids.next("msg")).as_deref(),
            Some("resp_abc123")
        );
        let mut ids = ItemIds::input("resp_abc123");
        assert_eq!(
            response_of_item(&ids.next("fco")).as_deref(),
            Some("resp_abc123")
        );
        assert_eq!(response_of_item("msg_"), None);
        assert_eq!(response_of_item("rs_x_y"), None);
    }

    #[test]
    fn outputs_round_trip_into_the_next_turn() {
        let answer = json!({"choices": [{"message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            "finish_reason": "tool_calls"}]});
        let (out, status) = output_items(&answer, &mut ItemIds::new("resp_1"));
        assert_eq!(status, "completed");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["type"], "function_call");
        let back = output_messages(&out);
        assert_eq!(back[0]["tool_calls"][0]["id"], "call_1");
        let items = input_items("resp_1", &back);
        assert_eq!(items[0]["type"], "function_call");
    }
}
