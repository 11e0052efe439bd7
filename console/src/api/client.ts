// The typed API client: openapi-fetch over the types openapi-typescript
// generated from api/openapi.yaml, so a call the contract does not have, or
// a field it does not name, fails the build. Every request passes the
// contract's own access rule (permissions.ts) first: the console never
// sends what its user may not do, so no page can end in a 403.
import createClient from 'openapi-fetch'
import type { components, paths } from './schema'
import { operationRules } from './permissions'

export type Schemas = components['schemas']

export const csrfHeader = 'X-Svc-Csrf-Token'

/** ApiError is a failed call as the contract's error body describes it. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly traceId: string,
    readonly details: Record<string, string> = {},
    readonly retryable?: boolean,
  ) {
    super(message)
    this.name = 'ApiError'
  }
}

/** What the client needs from the session (set by session.ts). */
export interface Credentials {
  csrf(): string
  may(permission: string, credential?: string): boolean
  /** Refreshes the session once after a 401; true when it worked. */
  recover(): Promise<boolean>
  /** The session ended for good: show the login page. */
  ended(): void
}

let creds: Credentials = {
  csrf: () => '',
  may: () => true,
  recover: async () => false,
  ended: () => {},
}

export function useCredentials(c: Credentials) {
  creds = c
}

const unsafe = (m: string) => !['GET', 'HEAD', 'OPTIONS'].includes(m)

export function ruleOf(method: string, schemaPath: string) {
  return operationRules[`${method.toUpperCase()} ${schemaPath}`]
}

/** may tells whether the signed-in user may call an operation. */
export function may(method: string, schemaPath: string): boolean {
  const r = ruleOf(method, schemaPath)
  return !!r && creds.may(r.permission, r.credential)
}

export const api = createClient<paths>({ baseUrl: '', credentials: 'same-origin' })

// Requests to repeat after a refreshed session, by openapi-fetch's id.
const replays = new Map<string, Request>()

api.use({
  onRequest({ request, schemaPath, id }) {
    const rule = ruleOf(request.method, schemaPath)
    if (!rule) {
      throw new ApiError(0, 'not_in_contract', `${request.method} ${schemaPath} is not a contract operation`, '')
    }
    if (!creds.may(rule.permission, rule.credential)) {
      // A page asked for something its user may not do: a bug of the page,
      // reported loudly instead of sending a request that can only fail.
      console.error(`console: ${request.method} ${schemaPath} needs ${rule.permission}; not sent`)
      throw new ApiError(403, 'permission_denied', `You do not have the permission ${rule.permission}.`, '')
    }
    if (unsafe(request.method)) {
      const csrf = creds.csrf()
      if (csrf) request.headers.set(csrfHeader, csrf)
    }
    if (!schemaPath.startsWith('/api/v2/auth/')) replays.set(id, request.clone())
    return request
  },
  async onResponse({ response, id }) {
    const replay = replays.get(id)
    replays.delete(id)
    if (response.status !== 401 || !replay) return response
    // The access cookie expired (or the node restarted): refresh once and
    // send the same request again with the new cookie.
    if (await creds.recover()) {
      if (unsafe(replay.method)) replay.headers.set(csrfHeader, creds.csrf())
      return fetch(replay)
    }
    creds.ended()
    return response
  },
})

type Result<T> = { data?: T; error?: unknown; response: Response }

/** call unwraps an openapi-fetch result: the data, or an ApiError. */
export async function call<T>(p: Promise<Result<T>>): Promise<T> {
  const { data, error, response } = await p
  if (response.ok) return data as T
  throw toApiError(response, error)
}

export function toApiError(response: Response, error: unknown): ApiError {
  const e = (error ?? {}) as Partial<Schemas['ErrorBody']>
  const trace = e.traceId ?? response.headers.get('X-Trace-Id') ?? ''
  if (typeof e === 'object' && e.code && e.message) {
    return new ApiError(response.status, e.code, e.message, trace, e.details ?? {}, e.retryable)
  }
  return new ApiError(response.status, 'http_' + response.status, `The server answered ${response.status} ${response.statusText}.`, trace)
}

/** describe turns anything thrown into a message and a trace id. */
export function describe(err: unknown): { message: string; code: string; traceId: string } {
  if (err instanceof ApiError) return { message: err.message, code: err.code, traceId: err.traceId }
  if (err instanceof Error) return { message: err.message, code: 'client_error', traceId: '' }
  return { message: String(err), code: 'client_error', traceId: '' }
}
