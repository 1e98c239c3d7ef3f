#!/usr/bin/env node
// A small OpenAI-compatible chat server over node-llama-cpp, serving one local GGUF model
// (SmolLM2-135M-Instruct in the tests). It is the REAL upstream of tests/python/test_real_model.py.
//
//   node server.mjs --model /path/to/model.gguf [--port 0] [--host 127.0.0.1] [--id NAME]
//                   [--threads 1] [--context-size 2048]
//   node server.mjs --model /path/to/model.gguf --check   # load the model, print `ok`, exit
//
// Endpoints: GET /v1/models, POST /v1/chat/completions (JSON or SSE with `stream: true`),
// GET /health. Errors come as {"error": {"message", "type", "param", "code"}}.
// Prints `listening on http://HOST:PORT` once the model is loaded and the port is bound.
//
// The model has a single context sequence, so generations run one at a time (a FIFO queue).
// `threads: 1` matters: with 2 threads on a busy 2-core machine generation is ~100x slower.

import http from "node:http";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { getLlama, LlamaChat } from "node-llama-cpp";

const { values: args } = parseArgs({
  options: {
    model: { type: "string" },
    port: { type: "string", default: "0" },
    host: { type: "string", default: "127.0.0.1" },
    id: { type: "string" },
    threads: { type: "string", default: "1" },
    "context-size": { type: "string", default: "2048" },
    check: { type: "boolean", default: false },
  },
});
if (!args.model) {
  console.error("usage: node server.mjs --model PATH.gguf [--port N] [--host H] [--id NAME]");
  process.exit(2);
}
// The name clients must send as `model` (case-insensitive); the file name without `.gguf`.
const MODEL_ID = args.id ?? path.basename(args.model).replace(/\.gguf$/i, "");
const CREATED = Math.floor(Date.now() / 1000);

const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath: args.model });
const context = await model.createContext({
  threads: Number(args.threads),
  contextSize: Number(args["context-size"]),
});
const sequence = context.getSequence();
const chat = new LlamaChat({ contextSequence: sequence });
if (args.check) {
  console.log(`ok: ${MODEL_ID} loads (${llama.gpu || "cpu"}, context ${context.contextSize} tokens)`);
  await llama.dispose();
  process.exit(0);
}

// --- errors --------------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message, { type = "invalid_request_error", param = null, code = null } = {}) {
    super(message);
    this.status = status;
    this.body = { error: { message, type, param, code } };
  }
}
const invalid = (param, message) => new ApiError(400, message, { param });

function sendJson(res, status, obj) {
  const body = JSON.stringify(obj);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

// --- one generation at a time --------------------------------------------------------------------

let queue = Promise.resolve();
function serialized(fn) {
  const run = queue.then(fn, fn);
  queue = run.catch(() => {});
  return run;
}

// --- requests ------------------------------------------------------------------------------------

function messageText(m, i) {
  const c = m.content;
  if (c == null) return "";
  if (typeof c === "string") return c;
  if (Array.isArray(c)) {
    return c
      .map((part, j) => {
        if (typeof part === "string") return part;
        if (part && part.type === "text" && typeof part.text === "string") return part.text;
        throw invalid(`messages[${i}].content[${j}]`, "Only text content parts are supported.");
      })
      .join("");
  }
  throw invalid(`messages[${i}].content`, "Invalid type for 'content': expected a string or an array.");
}

function toHistory(messages) {
  if (!Array.isArray(messages) || messages.length === 0) {
    throw invalid("messages", "'messages' must be a non-empty array.");
  }
  const history = [];
  messages.forEach((m, i) => {
    if (!m || typeof m !== "object") throw invalid(`messages[${i}]`, "Each message must be an object.");
    const text = messageText(m, i);
    switch (m.role) {
      case "system":
      case "developer":
        history.push({ type: "system", text });
        break;
      case "user":
      case "tool":
      case "function":
        history.push({ type: "user", text });
        break;
      case "assistant":
        history.push({ type: "model", response: [text] });
        break;
      default:
        throw invalid(`messages[${i}].role`, `Unknown role '${m.role}'.`);
    }
  });
  return history;
}

function numberParam(body, name, { integer = false, min = -Infinity } = {}) {
  const v = body[name];
  if (v == null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < min) {
    throw invalid(name, `Invalid value for '${name}'.`);
  }
  return v;
}

function parseChat(body) {
  if (!body || typeof body !== "object" || Array.isArray(body)) {
    throw invalid(null, "The body must be a JSON object.");
  }
  if (typeof body.model !== "string" || body.model.toLowerCase() !== MODEL_ID.toLowerCase()) {
    throw new ApiError(404, `The model '${body.model}' does not exist; this server serves '${MODEL_ID}'.`, {
      param: "model",
      code: "model_not_found",
    });
  }
  const history = toHistory(body.messages);
  const n = numberParam(body, "n", { integer: true, min: 1 });
  if (n !== undefined && n !== 1) throw invalid("n", "Only n=1 is supported.");
  const maxTokens =
    numberParam(body, "max_completion_tokens", { integer: true, min: 1 }) ??
    numberParam(body, "max_tokens", { integer: true, min: 1 });
  let stop = body.stop ?? [];
  if (typeof stop === "string") stop = [stop];
  if (!Array.isArray(stop) || !stop.every((s) => typeof s === "string")) {
    throw invalid("stop", "Invalid type for 'stop'.");
  }
  return {
    history,
    stream: body.stream === true,
    includeUsage: body.stream === true && body.stream_options?.include_usage === true,
    options: {
      maxTokens,
      temperature: numberParam(body, "temperature", { min: 0 }) ?? 1,
      topP: numberParam(body, "top_p", { min: 0 }),
      seed: numberParam(body, "seed", { integer: true }),
      customStopTriggers: stop.filter((s) => s.length > 0),
    },
  };
}

function promptTokens(history) {
  const { contextText } = chat.chatWrapper.generateContextState({
    chatHistory: [...history, { type: "model", response: [] }],
  });
  return contextText.tokenize(model.tokenizer).length;
}

const FINISH = { maxTokens: "length", abort: "stop" };

async function generate(req, signal, onText) {
  await sequence.clearHistory(); // every request starts from an empty context
  let completionTokens = 0;
  const started = performance.now();
  let firstTokenAt = null;
  const result = await chat.generateResponse(req.history, {
    ...req.options,
    signal,
    stopOnAbortSignal: true,
    onToken: (tokens) => {
      completionTokens += tokens.length;
      firstTokenAt ??= performance.now();
    },
    onTextChunk: onText,
  });
  const usage = {
    prompt_tokens: promptTokens(req.history),
    completion_tokens: completionTokens,
    total_tokens: 0,
  };
  usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  const total = performance.now() - started;
  const ttft = firstTokenAt == null ? null : firstTokenAt - started;
  console.error(
    `generated ${completionTokens} tokens (${result.metadata.stopReason}), ` +
      `first after ${ttft?.toFixed(0)} ms, total ${total.toFixed(0)} ms`,
  );
  return {
    text: result.response,
    usage,
    finishReason: FINISH[result.metadata.stopReason] ?? "stop",
  };
}

async function chatCompletions(req, res, body) {
  const parsed = parseChat(body);
  const id = `chatcmpl-${randomUUID()}`;
  const created = Math.floor(Date.now() / 1000);
  const abort = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) abort.abort(new Error("client went away"));
  });

  if (!parsed.stream) {
    const out = await serialized(() => generate(parsed, abort.signal));
    sendJson(res, 200, {
      id,
      object: "chat.completion",
      created,
      model: MODEL_ID,
      system_fingerprint: null,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: out.text, refusal: null },
          logprobs: null,
          finish_reason: out.finishReason,
        },
      ],
      usage: out.usage,
    });
    return;
  }

  const chunk = (choices, extra = {}) => ({
    id,
    object: "chat.completion.chunk",
    created,
    model: MODEL_ID,
    system_fingerprint: null,
    choices,
    ...extra,
  });
  const send = (obj) => {
    if (!res.destroyed) res.write(`data: ${JSON.stringify(obj)}\n\n`);
  };
  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    send(chunk([{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }]));
  };
  try {
    // Headers go out when generation starts (after queueing), so an error before that is still
    // an ordinary JSON error response.
    const out = await serialized(() => {
      start();
      return generate(parsed, abort.signal, (text) => {
        if (text) send(chunk([{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }]));
      });
    });
    send(chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: out.finishReason }]));
    if (parsed.includeUsage) send(chunk([], { usage: out.usage }));
    res.end("data: [DONE]\n\n");
  } catch (e) {
    if (!started) throw e;
    const err = e instanceof ApiError ? e : new ApiError(500, String(e?.message ?? e), { type: "server_error" });
    send(err.body);
    res.end();
  }
}

// --- HTTP ----------------------------------------------------------------------------------------

const MAX_BODY = 4 * 1024 * 1024;

function readBody(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    let size = 0;
    req.on("data", (d) => {
      size += d.length;
      if (size > MAX_BODY) {
        reject(new ApiError(413, "The request body is too large."));
        req.destroy();
      } else parts.push(d);
    });
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url, "http://x");
    const route = url.pathname.replace(/\/+$/, "");
    if (route === "/health" && req.method === "GET") {
      sendJson(res, 200, { status: "ok", model: MODEL_ID });
    } else if (route === "/v1/models" && req.method === "GET") {
      sendJson(res, 200, {
        object: "list",
        data: [{ id: MODEL_ID, object: "model", created: CREATED, owned_by: "node-llama-cpp" }],
      });
    } else if (route === "/v1/chat/completions" && req.method === "POST") {
      const raw = await readBody(req);
      let body;
      try {
        body = JSON.parse(raw);
      } catch {
        throw invalid(null, "The body is not valid JSON.");
      }
      await chatCompletions(req, res, body);
    } else if (route === "/v1/models" || route === "/v1/chat/completions" || route === "/health") {
      throw new ApiError(405, `Method ${req.method} is not allowed on ${route}.`, { code: "method_not_allowed" });
    } else {
      throw new ApiError(404, `Unknown route ${req.method} ${url.pathname}.`, { code: "not_found" });
    }
  } catch (e) {
    const err = e instanceof ApiError ? e : new ApiError(500, String(e?.message ?? e), { type: "server_error" });
    if (err.status >= 500) console.error(e);
    if (!res.headersSent) sendJson(res, err.status, err.body);
    else res.end();
  }
});

for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => {
    server.close();
    process.exit(0);
  });
}

server.listen(Number(args.port), args.host, () => {
  const { address, port } = server.address();
  console.log(`listening on http://${address}:${port}`);
});
