// The `openai` SDK this package extends: the copy the application itself loads, so that
// `instanceof OpenAI.APIError` (and the other classes) hold for its own `openai` import. The SDK
// ships an ES-module build and a CommonJS build with distinct classes: an application that
// `import`s this package gets the ESM build (imported here); one that `require()`s it goes
// through index.cjs, which loads the CommonJS build and hands it over before loading this module.
import OpenAIModule from 'openai';

export const HANDOVER = Symbol.for('@sovereign-gateway/client openai');

const OpenAI = globalThis[HANDOVER] ?? OpenAIModule;
export default OpenAI;
