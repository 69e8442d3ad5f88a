'use strict';
// Runs one invocation of a Node.js Lambda handler for the emulator (lambda_runner.py), the way
// the Lambda runtime does: loads `_HANDLER` (`path/file.export`, .js/.mjs/.cjs, CommonJS or ES
// module) from LAMBDA_TASK_ROOT, calls it with (event, context, callback) and reports on the
// control fd, one JSON line each: {"type":"init"} when the handler is about to be called, then
// {"type":"result","payload":"<JSON text>","error":bool}. Async handlers and callback-style
// ones (with callbackWaitsForEmptyEventLoop) are both supported, as are context.done/succeed/fail.

const fs = require('fs');
const path = require('path');
const util = require('util');
const { pathToFileURL } = require('url');

const env = process.env;
const controlFd = Number(env._CDKD_EMU_CONTROL_FD);
const eventFile = env._CDKD_EMU_EVENT_FILE;
const requestId = env._CDKD_EMU_REQUEST_ID;
const invokedFunctionArn = env._CDKD_EMU_INVOKED_ARN;
const timeoutMs = Number(env._CDKD_EMU_TIMEOUT_MS || 3000);
for (const key of Object.keys(env)) {
  if (key.startsWith('_CDKD_EMU_')) delete env[key];
}

let reported = false;

// The emulator kills a run when it ends; should the emulator itself die, the run ends too.
const parentPid = process.ppid;
setInterval(() => {
  if (process.ppid !== parentPid) process.exit(1);
}, 500).unref();

function send(message) {
  let data = Buffer.from(`${JSON.stringify(message)}\n`);
  while (data.length > 0) {
    const written = fs.writeSync(controlFd, data);
    data = data.subarray(written);
  }
}

// console.* as the Lambda runtime formats it: "<ISO time>\t<request id>\t<LEVEL>\t<message>".
function patchConsole() {
  const levels = { log: 'INFO', info: 'INFO', warn: 'WARN', error: 'ERROR', debug: 'DEBUG', trace: 'TRACE' };
  for (const [method, level] of Object.entries(levels)) {
    console[method] = (...args) => {
      let text = util.format(...args);
      if (method === 'trace') text += `\n${new Error().stack.split('\n').slice(2).join('\n')}`;
      process.stdout.write(`${new Date().toISOString()}\t${requestId}\t${level}\t${text}\n`);
    };
  }
}

function errorPayload(err) {
  try {
    if (err instanceof Error || (err && typeof err === 'object' && 'message' in err && 'stack' in err)) {
      return {
        errorType: err.name || (err.constructor && err.constructor.name) || 'Error',
        errorMessage: String(err.message),
        trace: String(err.stack || '').split('\n'),
      };
    }
    return { errorType: typeof err, errorMessage: String(err), trace: [] };
  } catch (_e) {
    return { errorType: 'handled', errorMessage: 'the error could not be read (message, name or stack)' };
  }
}

function reportResult(result) {
  if (reported) return;
  let payload;
  try {
    payload = JSON.stringify(result === undefined ? null : result);
  } catch (err) {
    reportError({ name: 'Runtime.MalformedHandlerReturn', message: `Unable to stringify response body: ${err.message}`, stack: '' });
    return;
  }
  reported = true;
  send({ type: 'result', payload: payload === undefined ? 'null' : payload });
  process.exit(0);
}

function reportError(err, exitCode = 0) {
  if (reported) return;
  reported = true;
  const payload = errorPayload(err);
  process.stdout.write(`${new Date().toISOString()}\t${requestId}\tERROR\tInvoke Error \t${JSON.stringify(payload)}\n`);
  send({ type: 'result', payload: JSON.stringify(payload), error: true });
  process.exit(exitCode);
}

function namedError(name, message, cause) {
  const err = new Error(message);
  err.name = name;
  if (cause && cause.stack) err.stack = `${name}: ${message}\n${String(cause.stack).split('\n').slice(1).join('\n')}`;
  return err;
}

// "dir/sub/index.handler" -> ["dir/sub/index", "handler"]; "index.a.b" -> ["index", "a.b"].
function splitHandler(spec) {
  const slash = spec.lastIndexOf('/');
  const dir = spec.slice(0, slash + 1);
  const rest = spec.slice(slash + 1);
  const dot = rest.indexOf('.');
  if (!rest || dot <= 0 || dot === rest.length - 1) {
    throw namedError('Runtime.MalformedHandlerName', `Bad handler ${spec}`);
  }
  return [dir + rest.slice(0, dot), rest.slice(dot + 1)];
}

let hooksRegistered = false;
function registerEsmHooks() {
  const mod = require('module');
  if (hooksRegistered || typeof mod.register !== 'function') return;
  hooksRegistered = true;
  mod.register(pathToFileURL(path.join(__dirname, 'lambda_esm_hooks.mjs')).href);
}

async function loadModule(taskRoot, moduleName) {
  const base = path.resolve(taskRoot, moduleName);
  const tryImport = (file) => {
    registerEsmHooks();
    return import(pathToFileURL(file).href);
  };
  try {
    if (fs.existsSync(`${base}.js`)) {
      try {
        return require(`${base}.js`);
      } catch (err) {
        if (err && (err.code === 'ERR_REQUIRE_ESM' || err.code === 'ERR_REQUIRE_ASYNC_MODULE')) return await tryImport(`${base}.js`);
        throw err;
      }
    }
    if (fs.existsSync(`${base}.mjs`)) return await tryImport(`${base}.mjs`);
    if (fs.existsSync(`${base}.cjs`)) return require(`${base}.cjs`);
    // As the runtime does: a module found on NODE_PATH (e.g. in a layer).
    return require(moduleName);
  } catch (err) {
    if (err instanceof SyntaxError) throw namedError('Runtime.UserCodeSyntaxError', `${err.name}: ${err.message}`, err);
    if (err && err.code === 'MODULE_NOT_FOUND' && String(err.message).includes(moduleName)) {
      throw namedError('Runtime.ImportModuleError', `Error: Cannot find module '${moduleName}'`, err);
    }
    throw err;
  }
}

function resolveExport(module, handlerPath, spec) {
  let value = module;
  for (const part of handlerPath.split('.')) {
    value = value === undefined || value === null ? undefined : value[part];
  }
  if (value === undefined && module && module.default && typeof module.default === 'object') {
    // a CommonJS module imported as ES module
    value = module.default;
    for (const part of handlerPath.split('.')) value = value === undefined || value === null ? undefined : value[part];
  }
  if (value === undefined) throw namedError('Runtime.HandlerNotFound', `${spec} is undefined or not exported`);
  if (typeof value !== 'function') throw namedError('Runtime.HandlerNotFound', `${spec} is not a function`);
  return value;
}

async function main() {
  patchConsole();
  process.on('uncaughtException', (err) => reportError(err, 129));
  process.on('unhandledRejection', (reason) => {
    const err = reason instanceof Error ? reason : namedError('Runtime.UnhandledPromiseRejection', String(reason));
    reportError(err, 128);
  });

  const spec = env._HANDLER || '';
  let handler;
  try {
    const [moduleName, handlerPath] = splitHandler(spec);
    const module = await loadModule(env.LAMBDA_TASK_ROOT, moduleName);
    handler = resolveExport(module, handlerPath, spec);
  } catch (err) {
    reportError(err);
    return;
  }
  const event = JSON.parse(fs.readFileSync(eventFile, 'utf8'));

  let pending; // a callback's result waiting for the event loop to empty
  const context = {
    callbackWaitsForEmptyEventLoop: true,
    functionName: env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: env.AWS_LAMBDA_FUNCTION_VERSION,
    invokedFunctionArn,
    memoryLimitInMB: env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    awsRequestId: requestId,
    logGroupName: env.AWS_LAMBDA_LOG_GROUP_NAME,
    logStreamName: env.AWS_LAMBDA_LOG_STREAM_NAME,
    identity: undefined,
    clientContext: undefined,
    getRemainingTimeInMillis: () => Math.max(deadline - Date.now(), 0),
    done: (err, result) => finish(err, result, false),
    succeed: (result) => finish(null, result, false),
    fail: (err) => finish(err === undefined || err === null ? 'handled' : err, undefined, false),
  };
  function finish(err, result, fromCallback) {
    if (reported || pending) return;
    const outcome = () => (err !== undefined && err !== null ? reportError(err) : reportResult(result));
    if (fromCallback && context.callbackWaitsForEmptyEventLoop) {
      pending = outcome;
      return;
    }
    outcome();
  }
  process.on('beforeExit', () => {
    if (pending) pending();
    else reportResult(null); // the handler neither returned a promise nor called back
  });

  send({ type: 'init' });
  const deadline = Date.now() + timeoutMs;
  let returned;
  try {
    returned = handler(event, context, (err, result) => finish(err, result, true));
  } catch (err) {
    reportError(err);
    return;
  }
  if (returned && typeof returned.then === 'function') {
    returned.then((result) => finish(null, result, false), (err) => finish(err === undefined || err === null ? namedError('Error', String(err)) : err, undefined, false));
  }
}

main().catch((err) => reportError(err));
