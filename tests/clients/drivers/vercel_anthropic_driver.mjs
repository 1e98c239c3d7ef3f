// The Vercel AI SDK's Anthropic provider, `createAnthropic({ baseURL, apiKey })` (`POST
// {baseURL}/messages` with `x-api-key`), against the gateway: generateText (with a system
// prompt), streamText with usage, and a tool loop (stopWhen), plain and streamed — the scenarios
// of ai_sdk_scenarios.mjs. Prints `RESULT {json}`.
//
// usage: node vercel_anthropic_driver.mjs MODEL   (GATEWAY_URL: the gateway's root, no /v1)
import { createAnthropic } from '@ai-sdk/anthropic';
import { generate, stream, streamedToolLoop, toolLoop } from './ai_sdk_scenarios.mjs';

const anthropic = createAnthropic({ baseURL: `${process.env.GATEWAY_URL}/v1`, apiKey: process.env.GATEWAY_KEY });
const model = anthropic(process.argv[2]);

const out = { provider: model.provider };
out.generate = await generate(model, { system: 'Answer briefly.' });
out.stream = await stream(model);
out.tools = await toolLoop(model);
out.streamTools = await streamedToolLoop(model);

console.log(`RESULT ${JSON.stringify(out)}`);
