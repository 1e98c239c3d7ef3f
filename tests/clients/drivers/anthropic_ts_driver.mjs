// The official TypeScript SDK, `@anthropic-ai/sdk`, pointed at the gateway with `baseURL` and
// `apiKey` (sent, in this version, as `Authorization: Bearer`), otherwise on its defaults: a message, a stream with the
// `messages.stream` helper and its final message, a tool round trip, and the typed error of a
// bad key. Prints `RESULT {json}`.
//
// usage: node anthropic_ts_driver.mjs MODEL   (GATEWAY_URL: the gateway's root, no /v1)
import Anthropic from '@anthropic-ai/sdk';

const client = new Anthropic({ baseURL: process.env.GATEWAY_URL, apiKey: process.env.GATEWAY_KEY,
                               maxRetries: 0, timeout: 20_000 });
const model = process.argv[2];
const WEATHER = {
  name: 'get_weather', description: 'Current weather in a city.',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

async function attempt(f) {
  try {
    return await f();
  } catch (e) {
    return { error: { name: e?.constructor?.name, status: e?.status, message: String(e?.message).slice(0, 500) } };
  }
}

const out = {};

out.create = await attempt(async () => {
  const { data: m, response } = await client.messages.create({
    model, max_tokens: 200, system: 'Answer briefly.',
    messages: [{ role: 'user', content: 'What is the capital of France?' }],
  }).withResponse();
  return { id: m.id, model: m.model, types: m.content.map((b) => b.type), text: m.content[0]?.text,
           stop_reason: m.stop_reason, usage: m.usage, request_id: m._request_id ?? response.headers.get('request-id') };
});

out.stream = await attempt(async () => {
  const s = client.messages.stream({ model, max_tokens: 200,
                                     messages: [{ role: 'user', content: 'Stream me the answer.' }] });
  let text = '';
  let deltas = 0;
  s.on('text', (t) => { text += t; deltas += 1; });
  const final = await s.finalMessage();
  return { text, deltas, final_text: final.content[0]?.text, stop_reason: final.stop_reason, usage: final.usage };
});

out.tools = await attempt(async () => {
  const question = [{ role: 'user', content: 'Weather in Riyadh?' }];
  const first = await client.messages.create({ model, max_tokens: 200, tools: [WEATHER], messages: question });
  const call = first.content.find((b) => b.type === 'tool_use');
  const second = await client.messages.create({
    model, max_tokens: 200, tools: [WEATHER],
    messages: [...question, { role: 'assistant', content: first.content },
               { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '41 degrees and sunny' }] }],
  });
  // The same call streamed: the helper rebuilds the tool input from the input_json_delta fragments.
  const streamed = await client.messages.stream({ model, max_tokens: 200, tools: [WEATHER], messages: question })
    .finalMessage();
  const streamedCall = streamed.content.find((b) => b.type === 'tool_use');
  return { first_stop: first.stop_reason, call: { name: call.name, input: call.input, id: call.id },
           second_stop: second.stop_reason, second_text: second.content[0]?.text,
           streamed: { stop: streamed.stop_reason, name: streamedCall?.name, input: streamedCall?.input } };
});

out.badKey = await attempt(async () => {
  const bad = new Anthropic({ baseURL: process.env.GATEWAY_URL, apiKey: 'sk-sov-wrong', maxRetries: 0 });
  try {
    await bad.messages.create({ model, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] });
    return { raised: null };
  } catch (e) {
    return { raised: { authError: e instanceof Anthropic.AuthenticationError, apiError: e instanceof Anthropic.APIError,
                       status: e.status, type: e.error?.error?.type, request_id: e.requestID ?? null } };
  }
});

console.log(`RESULT ${JSON.stringify(out)}`);
