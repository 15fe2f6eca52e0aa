// The only way the console talks to the service: the public JSON routes, with the pasted token
// (kept in sessionStorage) as the Authorization header. No cookies.

const TOKEN_KEY = "minisphere.console.token";
// The service's root: the console is served at <root>/ui/.
export const ROOT = location.pathname.replace(/\/ui(\/.*)?$/, "");

let onUnauthorized = () => {};

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code || `http_${status}`;
  }
}

export function getToken() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function dropToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** Called with (error) whenever the service answers 401: the console signs out. */
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

function newKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export async function request(method, path, {body, signal, write = false, token} = {}) {
  const headers = {Accept: "application/json"};
  const bearer = token ?? getToken();
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (write) headers["Idempotency-Key"] = newKey();     // safe to resend
  const response = await fetch(ROOT + path, {
    method, headers, signal, body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit", cache: "no-store", redirect: "error",
  });
  let data = null;
  const text = await response.text();
  if (text) {
    try { data = JSON.parse(text); } catch (_e) { data = null; }
  }
  if (!response.ok) {
    const detail = (data && data.error) || {};
    const error = new ApiError(response.status, detail.code, detail.message);
    if (response.status === 401 && token === undefined) onUnauthorized(error);
    throw error;
  }
  return data;
}

const WRITES = new Set(["capture", "append", "update", "setStatus", "forget", "link", "unlink"]);

/** A workspace method: POST /v1/w/{workspace}/{method} with the camelCase arguments. */
export function call(workspace, method, args = {}, signal) {
  return request("POST", `/v1/w/${encodeURIComponent(workspace)}/${method}`,
                 {body: args, signal, write: WRITES.has(method)});
}

export function get(path, signal) {
  return request("GET", path, {signal});
}

export function isAbort(error) {
  return error && error.name === "AbortError";
}
