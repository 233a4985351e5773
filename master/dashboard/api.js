// The control API, as the dashboard asks it: GET requests with fetch, to paths relative to the
// page (so that a proxy may serve the dashboard under a prefix), with the API token as a Bearer
// header once the user gave it. The token stays in this tab's sessionStorage: closing the tab
// forgets it, and no other site can read it.

const TOKEN_KEY = "corral.api_token";

// A failed call: `status` is the HTTP status, or 0 when nothing answered.
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY) || "",
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

// The JSON answer of GET `path` ("workers", "runs/r1-c034"). Throws ApiError: 401 when the
// token is missing or wrong, 0 when the daemon did not answer, else the status and the API's
// {"error": ...} message.
export async function get(path) {
  const headers = {Accept: "application/json"};
  if (token.get()) headers.Authorization = "Bearer " + token.get();
  let res;
  try {
    res = await fetch(path, {headers, cache: "no-store", credentials: "omit"});
  } catch (e) {
    throw new ApiError(0, "no answer: " + e.message);
  }
  let body = null;
  try {
    body = await res.json();
  } catch (e) {
    if (res.ok) throw new ApiError(res.status, "the answer is not JSON");
  }
  if (!res.ok) {
    throw new ApiError(res.status, body && typeof body.error === "string" ? body.error
                                                                          : res.statusText);
  }
  return body;
}

// A path segment or query value as a URL takes it.
export const enc = encodeURIComponent;
