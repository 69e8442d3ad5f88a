'use strict';
// cdkd local's Node.js bootstrap: one invocation of a Lambda handler, as the Lambda runtime runs
// it. Loads `_HANDLER` (`dir/file.export`; .js, .mjs or .cjs; CommonJS or ES module; or a module
// on NODE_PATH) from LAMBDA_TASK_ROOT, calls it with (event, context, callback), and writes
// {"error": bool, "payload": "<JSON text>"} to the result file cdkd gave it. console.* lines carry
// Lambda's "<time>\t<request id>\t<LEVEL>\t" prefix. The handler's timeout is enforced here.

const fs = require('fs');
const path = require('path');
const util = require('util');
const { pathToFileURL } = require('url');

const env = process.env;
const resultFile = env._CDKD_LOCAL_RESULT;
const eventFile = env._CDKD_LOCAL_EVENT;
const requestId = env._CDKD_LOCAL_REQUEST_ID;
const invokedFunctionArn = env._CDKD_LOCAL_ARN;
const timeoutMs = Number(env._CDKD_LOCAL_TIMEOUT_MS || 3000);
for (const key of Object.keys(env)) {
  if (key.startsWith('_CDKD_LOCAL_')) delete env[key];
}

let done = false;

function write(error, payload) {
  if (done) return;
  done = true;
  fs.writeFileSync(resultFile, JSON.stringify({ error, payload }));
}

for (const [method, level] of Object.entries({ log: 'INFO', info: 'INFO', warn: 'WARN', error: 'ERROR', debug: 'DEBUG', trace: 'TRACE' })) {
  console[method] = (...args) => {
    process.stdout.write(`${new Date().toISOString()}\t${requestId}\t${level}\t${util.format(...args)}\n`);
  };
}

function errorPayload(err) {
  if (err instanceof Error || (err && typeof err === 'object' && 'message' in err)) {
    return {
      errorType: err.name || 'Error',
      errorMessage: String(err.message),
      trace: String(err.stack || '').split('\n'),
    };
  }
  return { errorType: typeof err, errorMessage: String(err), trace: [] };
}

function succeed(result) {
  let text;
  try {
    text = JSON.stringify(result === undefined ? null : result);
  } catch (err) {
    fail({ name: 'Runtime.MalformedHandlerReturn', message: `Unable to stringify response body: ${err.message}` });
    return;
  }
  write(false, text === undefined ? 'null' : text);
  process.exit(0);
}

function fail(err, code = 0) {
  if (done) return;
  const payload = errorPayload(err);
  process.stdout.write(`${new Date().toISOString()}\t${requestId}\tERROR\tInvoke Error \t${JSON.stringify(payload)}\n`);
  write(true, JSON.stringify(payload));
  process.exit(code);
}

function named(name, message) {
  const err = new Error(message);
  err.name = name;
  return err;
}

async function load(taskRoot, moduleName) {
  const base = path.resolve(taskRoot, moduleName);
  const esm = (file) => import(pathToFileURL(file).href);
  try {
    if (fs.existsSync(`${base}.js`)) {
      try {
        return require(`${base}.js`);
      } catch (err) {
        if (err && (err.code === 'ERR_REQUIRE_ESM' || err.code === 'ERR_REQUIRE_ASYNC_MODULE')) return await esm(`${base}.js`);
        throw err;
      }
    }
    if (fs.existsSync(`${base}.mjs`)) return await esm(`${base}.mjs`);
    if (fs.existsSync(`${base}.cjs`)) return require(`${base}.cjs`);
    return require(moduleName);
  } catch (err) {
    if (err instanceof SyntaxError) throw named('Runtime.UserCodeSyntaxError', `${err.name}: ${err.message}`);
    if (err && err.code === 'MODULE_NOT_FOUND' && String(err.message).includes(moduleName)) {
      throw named('Runtime.ImportModuleError', `Error: Cannot find module '${moduleName}'`);
    }
    throw err;
  }
}

async function main() {
  process.on('uncaughtException', (err) => fail(err, 129));
  process.on('unhandledRejection', (reason) => fail(reason instanceof Error ? reason : named('Runtime.UnhandledPromiseRejection', String(reason)), 128));
  const spec = env._HANDLER || '';
  let handler;
  try {
    const slash = spec.lastIndexOf('/');
    const rest = spec.slice(slash + 1);
    const dot = rest.indexOf('.');
    if (dot <= 0 || dot === rest.length - 1) throw named('Runtime.MalformedHandlerName', `Bad handler ${spec}`);
    const module = await load(env.LAMBDA_TASK_ROOT, spec.slice(0, slash + 1) + rest.slice(0, dot));
    const lookup = (root) => rest.slice(dot + 1).split('.').reduce((value, part) => (value == null ? undefined : value[part]), root);
    handler = lookup(module);
    if (handler === undefined && module && module.default) handler = lookup(module.default);
    if (handler === undefined) throw named('Runtime.HandlerNotFound', `${spec} is undefined or not exported`);
    if (typeof handler !== 'function') throw named('Runtime.HandlerNotFound', `${spec} is not a function`);
  } catch (err) {
    fail(err);
    return;
  }
  const event = JSON.parse(fs.readFileSync(eventFile, 'utf8'));
  const deadline = Date.now() + timeoutMs;
  setTimeout(() => {
    const seconds = (timeoutMs / 1000).toFixed(2);
    process.stdout.write(`${new Date().toISOString()} ${requestId} Task timed out after ${seconds} seconds\n`);
    write(true, JSON.stringify({ errorType: 'Sandbox.Timedout', errorMessage: `${new Date().toISOString()} ${requestId} Task timed out after ${seconds} seconds` }));
    process.exit(0);
  }, timeoutMs).unref();
  let pending;
  const context = {
    callbackWaitsForEmptyEventLoop: true,
    functionName: env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: env.AWS_LAMBDA_FUNCTION_VERSION,
    invokedFunctionArn,
    memoryLimitInMB: env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    awsRequestId: requestId,
    logGroupName: env.AWS_LAMBDA_LOG_GROUP_NAME,
    logStreamName: env.AWS_LAMBDA_LOG_STREAM_NAME,
    getRemainingTimeInMillis: () => Math.max(deadline - Date.now(), 0),
    done: (err, result) => finish(err, result, false),
    succeed: (result) => finish(null, result, false),
    fail: (err) => finish(err == null ? 'handled' : err, undefined, false),
  };
  function finish(err, result, fromCallback) {
    if (done || pending) return;
    const outcome = () => (err != null ? fail(err) : succeed(result));
    if (fromCallback && context.callbackWaitsForEmptyEventLoop) {
      pending = outcome;
      return;
    }
    outcome();
  }
  process.on('beforeExit', () => (pending ? pending() : succeed(null)));
  let returned;
  try {
    returned = handler(event, context, (err, result) => finish(err, result, true));
  } catch (err) {
    fail(err);
    return;
  }
  if (returned && typeof returned.then === 'function') {
    returned.then((result) => finish(null, result, false), (err) => finish(err == null ? named('Error', String(err)) : err, undefined, false));
  }
}

main().catch((err) => fail(err));
