// The Vercel AI SDK's default OpenAI provider, `createOpenAI({ baseURL, apiKey })`, and
// `openai(modelId)` (the Responses API, `POST /v1/responses`, in these versions), against the
// gateway: generateText, streamText, a tool loop, structured output, a refused request, a second
// turn the SDK's way (the first turn's `response.messages` appended to the history). Prints
// `RESULT {json}`.
//
// usage: node vercel_ai_driver.mjs MODEL
import { createOpenAI } from '@ai-sdk/openai';
import { embedMany, generateText, jsonSchema, Output } from 'ai';
import { attempt, generate, stream, streamedToolLoop, toolLoop } from './ai_sdk_scenarios.mjs';

const openai = createOpenAI({ baseURL: process.env.GATEWAY_URL, apiKey: process.env.GATEWAY_KEY });
const model = openai(process.argv[2]);

const out = { provider: model.provider };
out.generate = await generate(model);
out.stream = await stream(model);
out.tools = await toolLoop(model);
out.streamTools = await streamedToolLoop(model);

out.embed = await attempt(async () => {
  const r = await embedMany({ model: openai.embedding('multilingual-e5-small'),
                              values: ['The retention period is seven years.', 'مدة الاحتفاظ سبع سنوات.'] });
  return { count: r.embeddings.length, dims: r.embeddings.map((e) => e.length), usage: r.usage };
});

out.structured = await attempt(async () => {
  const r = await generateText({
    model,
    prompt: 'How long are customer records kept?',
    output: Output.object({
      schema: jsonSchema({ type: 'object', properties: { policy: { type: 'string' }, years: { type: 'integer' } },
                           required: ['policy', 'years'], additionalProperties: false }),
    }),
  });
  return { output: r.output, finishReason: r.finishReason };
});

out.guardrail = await attempt(async () => {
  const r = await generateText({ model, prompt: 'Charge my card 4111 1111 1111 1111 please.', maxRetries: 0 });
  return { text: r.text };
});

// A second turn as a chat app sends it: the history with the first answer's `response.messages`.
// With `store` on (the provider's default) the provider sends the earlier assistant message as an
// `item_reference` to the stored item; with `store: false` it sends the message itself.
async function twoTurns(providerOptions) {
  const question = 'What is the capital of France?';
  const first = await generateText({ model, prompt: question, providerOptions });
  const messages = [{ role: 'user', content: question }, ...first.response.messages,
                    { role: 'user', content: 'And of Spain?' }];
  const second = await generateText({ model, messages, providerOptions, maxRetries: 0 });
  return { text: second.text, input: second.request.body?.input?.map((i) => i.type ?? i.role) };
}
out.multiturn = await attempt(() => twoTurns(undefined));
out.multiturnStoreFalse = await attempt(() => twoTurns({ openai: { store: false } }));

console.log('RESULT ' + JSON.stringify(out));
