// The Vercel AI SDK scenarios both of its providers run against the gateway (the OpenAI one,
// vercel_ai_driver.mjs, and the Anthropic one, vercel_anthropic_driver.mjs): generateText,
// streamText, and a tool loop plain and streamed. Each returns what the tests assert on, or
// `{ error }` with what the SDK raised.
import { generateText, streamText, tool, jsonSchema, stepCountIs } from 'ai';

export const ORDER_RESULT = 'Order SOV-4417 ships on Tuesday.';

function error(e) {
  return { name: e?.name, statusCode: e?.statusCode, message: String(e?.message).slice(0, 500),
           responseBody: e?.responseBody };
}

export async function attempt(f) {
  try {
    return await f();
  } catch (e) {
    return { error: error(e) };
  }
}

export const generate = (model, options = {}) => attempt(async () => {
  const r = await generateText({ model, prompt: 'What is the capital of France?', ...options });
  return { text: r.text, finishReason: r.finishReason, usage: r.usage, modelId: r.response?.modelId };
});

export const stream = (model) => attempt(async () => {
  const s = streamText({ model, prompt: 'Name three rivers.' });
  let text = '';
  let parts = 0;
  for await (const delta of s.textStream) {
    text += delta;
    parts += 1;
  }
  return { text, parts, finishReason: await s.finishReason, usage: await s.usage };
});

function orderTools(calls) {
  return {
    lookUpOrder: tool({
      description: 'Looks up the order the customer is asking about.',
      inputSchema: jsonSchema({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'],
                                additionalProperties: false }),
      execute: async ({ text }) => {
        calls.push(text);
        return ORDER_RESULT;
      },
    }),
  };
}

export const toolLoop = (model) => attempt(async () => {
  const calls = [];
  const r = await generateText({ model, prompt: 'Where is my order?', tools: orderTools(calls),
                                 stopWhen: stepCountIs(3) });
  return { text: r.text, steps: r.steps.length, calls, finishReason: r.finishReason, usage: r.totalUsage };
});

export const streamedToolLoop = (model) => attempt(async () => {
  const calls = [];
  const s = streamText({ model, prompt: 'Where is my order?', tools: orderTools(calls), stopWhen: stepCountIs(3) });
  let text = '';
  for await (const delta of s.textStream) text += delta;
  return { text, steps: (await s.steps).length, calls, finishReason: await s.finishReason,
           usage: await s.totalUsage };
});
