'use strict';
// Required (`node --require`) before a Lambda handler the emulator runs (lambda_runner.py).
//
// 1. Requests to this machine's loopback without the emulator's port go to the emulator over
//    plain http. CloudFormation custom-resource handlers (aws-cdk-lib's cfn-response and
//    provider framework) PUT their response with `https.request({hostname, path})`, dropping
//    the pre-signed ResponseURL's scheme and port: `http://127.0.0.1:PORT/bucket/key?X-Amz-...`
//    would go to https://127.0.0.1:443. Only loopback hosts are ever redirected, and only when
//    the port is missing, 80, 443 or the emulator's own one reached over https; a request to
//    another local port is left alone.
// 2. Connections to anything but loopback are refused at once (the runs must not leave the
//    machine; an SDK client the endpoint does not cover fails fast instead of going out).
//
// AWS SDK v3 clients need nothing more: they honour AWS_ENDPOINT_URL, and against an IP
// endpoint S3 clients address buckets path-style on their own.

const http = require('http');
const https = require('https');
const net = require('net');

const endpoint = new URL(process.env.AWS_ENDPOINT_URL || 'http://127.0.0.1:4566');
const EMU_HOST = endpoint.hostname;
const EMU_PORT = Number(endpoint.port || 80);
const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

function isLoopback(host) {
  if (host === undefined || host === null || host === '') return true; // Node's default: localhost
  const h = String(host).toLowerCase();
  return LOOPBACK_NAMES.has(h) || /^127\.\d+\.\d+\.\d+$/.test(h) || h.endsWith('.localhost');
}

// -- 1. redirect ------------------------------------------------------------------------------

function splitArgs(args) {
  let url = null;
  let options = {};
  let callback;
  let rest = args;
  if (typeof rest[0] === 'string' || rest[0] instanceof URL) {
    url = typeof rest[0] === 'string' ? new URL(rest[0]) : rest[0];
    rest = rest.slice(1);
  }
  if (typeof rest[0] === 'function') {
    callback = rest[0];
  } else {
    options = rest[0] || {};
    callback = rest[1];
  }
  const merged = {};
  if (url) {
    merged.protocol = url.protocol;
    merged.hostname = url.hostname.replace(/^\[|\]$/g, '');
    if (url.port) merged.port = url.port;
    merged.path = `${url.pathname || '/'}${url.search || ''}`;
    if (url.username || url.password) merged.auth = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  }
  Object.assign(merged, options);
  return { options: merged, callback };
}

// The options to send to the emulator instead, or null to leave the request alone.
function redirected(defaultProtocol, args) {
  const { options, callback } = splitArgs(args);
  const host = options.hostname !== undefined && options.hostname !== null ? options.hostname : options.host;
  if (options.socketPath || !isLoopback(host)) return null;
  const protocol = options.protocol || defaultProtocol;
  const port = options.port !== undefined && options.port !== null && options.port !== '' ? Number(options.port) : null;
  if (port === EMU_PORT && protocol === 'http:') return null;
  if (port !== null && port !== EMU_PORT && port !== 80 && port !== 443) return null;
  const target = { ...options, protocol: 'http:', hostname: EMU_HOST, port: EMU_PORT };
  delete target.host;
  delete target.defaultPort;
  if (target.agent && target.agent.protocol !== 'http:') delete target.agent; // an https.Agent
  if (target.headers) {
    target.headers = { ...target.headers };
    for (const key of Object.keys(target.headers)) {
      if (key.toLowerCase() === 'host') delete target.headers[key];
    }
  }
  return { options: target, callback };
}

const originals = {
  httpRequest: http.request,
  httpGet: http.get,
  httpsRequest: https.request,
  httpsGet: https.get,
};

function wrapRequest(defaultProtocol, original) {
  return function request(...args) {
    const r = redirected(defaultProtocol, args);
    if (!r) return original.apply(this, args);
    return r.callback ? originals.httpRequest(r.options, r.callback) : originals.httpRequest(r.options);
  };
}

function wrapGet(defaultProtocol, original) {
  return function get(...args) {
    const r = redirected(defaultProtocol, args);
    if (!r) return original.apply(this, args);
    const req = r.callback ? originals.httpRequest(r.options, r.callback) : originals.httpRequest(r.options);
    req.end();
    return req;
  };
}

http.request = wrapRequest('http:', originals.httpRequest);
http.get = wrapGet('http:', originals.httpGet);
https.request = wrapRequest('https:', originals.httpsRequest);
https.get = wrapGet('https:', originals.httpsGet);

if (typeof globalThis.fetch === 'function') {
  const originalFetch = globalThis.fetch;
  globalThis.fetch = function fetch(input, init) {
    try {
      const raw = typeof input === 'string' || input instanceof URL ? String(input) : input && input.url;
      const url = new URL(raw);
      const host = url.hostname.replace(/^\[|\]$/g, '');
      const port = url.port ? Number(url.port) : null;
      const direct = port === EMU_PORT && url.protocol === 'http:';
      const other = port !== null && port !== EMU_PORT && port !== 80 && port !== 443;
      if (isLoopback(host) && !direct && !other) {
        const target = `http://${EMU_HOST}:${EMU_PORT}${url.pathname}${url.search}`;
        if (typeof input === 'string' || input instanceof URL) return originalFetch.call(this, target, init);
        return originalFetch.call(this, new Request(target, input), init);
      }
    } catch (_err) {
      // not a URL we can read: leave it to fetch
    }
    return originalFetch.call(this, input, init);
  };
}

// -- 2. loopback only --------------------------------------------------------------------------

const originalConnect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function connect(...args) {
  let first = args[0];
  if (Array.isArray(first)) first = first[0]; // net's internal normalized form
  let host;
  let path;
  if (first !== null && typeof first === 'object') {
    host = first.host;
    path = first.path;
  } else if (typeof first === 'string' && !/^\d+$/.test(first)) {
    path = first; // an IPC socket
  } else {
    host = typeof args[1] === 'string' ? args[1] : undefined;
  }
  if (!path && !isLoopback(host)) {
    const err = new Error(`connect ECONNREFUSED ${host}: Lambda handlers run by the cdkd emulator reach only 127.0.0.1`);
    err.code = 'ECONNREFUSED';
    err.syscall = 'connect';
    err.address = host;
    process.nextTick(() => this.destroy(err));
    return this;
  }
  return originalConnect.apply(this, args);
};
