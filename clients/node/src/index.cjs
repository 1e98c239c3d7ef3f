// CommonJS entry (`require('@sovereign-gateway/client')`): the package itself is ES modules,
// loaded with require(esm) (Node.js >= 20.19). The `openai` SDK it extends is the application's
// CommonJS build, handed over first (src/openai.js), so that errors are `instanceof` the classes
// of `require('openai')`.
'use strict';

const openai = require('openai');
globalThis[Symbol.for('@sovereign-gateway/client openai')] ??= openai.default ?? openai;
module.exports = require('./index.js');
