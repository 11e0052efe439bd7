// The console session: who is signed in, what they may do (the permission
// points of the login or /auth/me answer), the CSRF token state-changing
// requests carry, and the refresh that keeps the short-lived access cookie
// alive. The tokens themselves live only in HttpOnly cookies.
import { reactive } from 'vue'
import { api, ApiError, call, toApiError, useCredentials, type Schemas } from './api/client'

type User = Schemas['User']

interface State {
  user: User | null
  permissions: string[]
  csrf: string
  /** When the access cookie runs out (known after login or refresh). */
  accessExpiresAt: number
  sessionExpiresAt: number
  /** The last session ended by itself (expiry, revocation): tell the user. */
  endedMessage: string
}

export const session = reactive<State>({
  user: null,
  permissions: [],
  csrf: '',
  accessExpiresAt: 0,
  sessionExpiresAt: 0,
  endedMessage: '',
})

// The CSRF token survives a reload in this tab only, so that a reload after
// the access cookie expired can still refresh (the refresh needs it).
const csrfKey = 'svc.csrf'
// Whether this browser signed in and has not signed out since: without it
// the console does not ask /auth/me, which could only answer 401.
const signedInKey = 'svc.signedIn'
// The tabs of one browser share the cookies, so they share when the access
// cookie expires and when it was last refreshed.
const expiresKey = 'svc.accessExpiresAt'
const refreshedKey = 'svc.refreshedAt'

let onEnded: () => void = () => {}
export function whenSessionEnds(fn: () => void) {
  onEnded = fn
}

/** can tells whether the user holds a permission point (`*` holds all). */
export function can(permission: string): boolean {
  if (permission === 'public') return true
  if (!session.user) return false
  if (permission === 'auth') return true
  return session.permissions.includes('*') || session.permissions.includes(permission)
}

/** canAny is true when the user holds at least one of the points. */
export function canAny(...permissions: string[]): boolean {
  return permissions.some(can)
}

let refreshTimer: ReturnType<typeof setTimeout> | undefined

function adopt(s: Schemas['ConsoleSession']) {
  session.user = s.user
  session.permissions = s.permissions
  session.csrf = s.csrfToken
  session.accessExpiresAt = Date.parse(s.accessExpiresAt)
  session.sessionExpiresAt = Date.parse(s.sessionExpiresAt)
  session.endedMessage = ''
  sessionStorage.setItem(csrfKey, s.csrfToken)
  localStorage.setItem(signedInKey, '1')
  localStorage.setItem(expiresKey, String(session.accessExpiresAt))
  schedule()
}

function forget(message = '') {
  clearTimeout(refreshTimer)
  session.user = null
  session.permissions = []
  session.csrf = ''
  session.accessExpiresAt = 0
  session.sessionExpiresAt = 0
  session.endedMessage = message
  sessionStorage.removeItem(csrfKey)
  localStorage.removeItem(signedInKey)
  localStorage.removeItem(expiresKey)
}

// Refresh at about 70% of the access cookie's life, before it expires.
function schedule() {
  clearTimeout(refreshTimer)
  if (!session.accessExpiresAt) return
  const wait = Math.max(5_000, (session.accessExpiresAt - Date.now()) * 0.7)
  refreshTimer = setTimeout(() => {
    // Another tab may have refreshed meanwhile: then follow its cookie.
    const shared = Number(localStorage.getItem(expiresKey) ?? 0)
    if (shared > session.accessExpiresAt) {
      session.accessExpiresAt = shared
      schedule()
      return
    }
    void refresh()
  }, wait)
}

let refreshing: Promise<boolean> | null = null

/**
 * refresh rotates the session's tokens, one refresh at a time in this
 * browser: tabs take a lock, and a tab that waited while another refreshed
 * uses the new cookies instead of presenting the old refresh token again
 * (which the server would take for a stolen token and end the session).
 */
export function refresh(): Promise<boolean> {
  refreshing ??= (async () => {
    const started = Date.now()
    const rotate = async () => {
      if (Number(localStorage.getItem(refreshedKey) ?? 0) >= started) {
        session.accessExpiresAt = Number(localStorage.getItem(expiresKey) ?? 0)
        schedule()
        return true
      }
      const csrf = session.csrf || sessionStorage.getItem(csrfKey) || ''
      if (!csrf) return false
      try {
        adopt(await call(api.POST('/api/v2/auth/refresh', { headers: { 'X-Svc-Csrf-Token': csrf } })))
        localStorage.setItem(refreshedKey, String(Date.now()))
        return true
      } catch {
        return false
      }
    }
    try {
      return navigator.locks ? await navigator.locks.request('svc.refresh', rotate) : await rotate()
    } finally {
      refreshing = null
    }
  })()
  return refreshing
}

useCredentials({
  csrf: () => session.csrf,
  may(permission, credential) {
    // An operation restricted to another credential (API tokens, meeting
    // participants' tokens and tickets) is never the console's to call.
    if (credential && credential !== 'console-session') return false
    // Whether a session exists at all is the server's to say (401).
    if (permission === 'auth') return true
    return can(permission)
  },
  recover: () => (session.user ? refresh() : Promise.resolve(false)),
  ended() {
    if (!session.user) return
    forget('Your session ended (it expired, was revoked, or your account changed). Sign in again.')
    onEnded()
  },
})

/** restore finds out, after a page load, whether a session is open. */
export async function restore(): Promise<boolean> {
  if (!localStorage.getItem(signedInKey)) return false
  const { data, response } = await api.GET('/api/v2/auth/me')
  if (response.ok && data && data.user && data.credentialKind === 'console-session') {
    session.user = data.user
    session.permissions = data.permissions
    session.csrf = data.csrfToken ?? sessionStorage.getItem(csrfKey) ?? ''
    if (session.csrf) sessionStorage.setItem(csrfKey, session.csrf)
    session.accessExpiresAt = Number(localStorage.getItem(expiresKey) ?? 0)
    schedule()
    return true
  }
  if (response.status === 401 && sessionStorage.getItem(csrfKey)) {
    session.csrf = sessionStorage.getItem(csrfKey) ?? ''
    if (await refresh()) return true
  }
  forget()
  return false
}

export interface LoginInput {
  username: string
  password: string
  captchaId?: string
  captchaAnswer?: string
}

/** login opens a session; a captcha challenge comes back as ApiError details. */
export async function login(input: LoginInput) {
  const { data, error, response } = await api.POST('/api/v2/auth/login', { body: input })
  if (!response.ok || !data) throw toApiError(response, error)
  adopt(data)
}

/** logout ends the session on the server and forgets it here. */
export async function logout() {
  try {
    await call(api.POST('/api/v2/auth/logout'))
  } catch (e) {
    // An already-ended session is logged out all the same.
    if (!(e instanceof ApiError) || e.status !== 401) throw e
  } finally {
    forget()
  }
}
