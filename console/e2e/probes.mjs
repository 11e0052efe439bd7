// Security behaviour as a browser sees it: the cookies, CSRF refusals
// (missing or wrong token, a cross-site request carrying the cookies), the
// Content-Security-Policy refusing inline and foreign scripts, framing
// refused, and the caching headers.
import { assert, env, until } from './lib.mjs'

export async function probeHeaders(page) {
  const doc = await page.request.get(env.base + '/channels')
  const h = doc.headers()
  const csp = h['content-security-policy'] ?? ''
  assert(doc.status() === 200 && h['content-type'].startsWith('text/html'), 'a client route answers index.html')
  assert(/script-src 'self'(;|$)/.test(csp) && !csp.includes('unsafe-inline') && !csp.includes('unsafe-eval'), `strict script-src: ${csp}`)
  assert(csp.includes(`connect-src 'self' ${env.mediaOrigin}`) && csp.includes(`media-src 'self' blob: ${env.mediaOrigin}`), `media origin allowed: ${csp}`)
  assert(csp.includes("frame-ancestors 'none'") && h['x-frame-options'] === 'DENY', 'framing refused')
  assert(h['x-content-type-options'] === 'nosniff' && h['referrer-policy'] === 'no-referrer', 'nosniff and referrer policy')
  assert(h['cache-control'] === 'no-cache', `index.html is revalidated: ${h['cache-control']}`)
  const html = await doc.text()
  assert(!/<script(?![^>]*\bsrc=)[^>]*>/.test(html), 'index.html has no inline script')
  const asset = html.match(/src="(\/assets\/[^"]+\.js)"/)?.[1]
  assert(asset, 'index.html loads a hashed script')
  const a = await page.request.get(env.base + asset, { headers: { 'Accept-Encoding': 'gzip' } })
  assert(a.headers()['cache-control'] === 'public, max-age=31536000, immutable', `hashed assets are immutable: ${a.headers()['cache-control']}`)
  const missing = await page.request.get(env.base + '/assets/missing-0000.js')
  assert(missing.status() === 404, 'a missing asset is 404, not index.html')
  const api404 = await page.request.get(env.base + '/api/v2/no-such-thing')
  assert(api404.status() === 404 && (await api404.json()).code === 'not_found', 'unknown API paths keep their JSON 404')
  return { csp }
}

/** probeCookies runs in a signed-in context. */
export async function probeCookies(context, page) {
  const cookies = await context.cookies()
  const session = cookies.find((c) => c.name === 'svc_session')
  const refresh = cookies.find((c) => c.name === 'svc_refresh')
  assert(session && session.httpOnly && session.sameSite === 'Strict' && session.path === '/', `session cookie: ${JSON.stringify(session)}`)
  assert(refresh && refresh.httpOnly && refresh.sameSite === 'Strict' && refresh.path === '/api/v2/auth', `refresh cookie: ${JSON.stringify(refresh)}`)
  const visible = await page.evaluate(() => document.cookie)
  assert(!visible.includes('svc_session') && !visible.includes('svc_refresh'), 'the tokens are not readable by scripts')
}

/** probeCSRF runs on a console page of a signed-in context. */
export async function probeCSRF(context) {
  const page = await context.newPage()
  await page.goto(env.base + '/')
  await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor()
  const out = await page.evaluate(async () => {
    const csrf = sessionStorage.getItem('svc.csrf') ?? ''
    const post = (headers) =>
      fetch('/api/v2/channels/groups', { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify({ groupKey: 'csrf-ok', name: 'csrf ok' }) })
    const none = await post({})
    const wrong = await post({ 'X-Svc-Csrf-Token': 'not-the-token' })
    const right = await post({ 'X-Svc-Csrf-Token': csrf })
    const del = await fetch('/api/v2/channels/groups/csrf-ok', { method: 'DELETE', headers: { 'X-Svc-Csrf-Token': csrf } })
    return { csrf: !!csrf, none: [none.status, (await none.json()).code], wrong: [wrong.status, (await wrong.json()).code], right: right.status, del: del.status }
  })
  assert(out.csrf, 'the console keeps its CSRF token')
  assert(out.none[0] === 403 && out.none[1] === 'csrf_rejected', `a POST without the CSRF header: ${out.none}`)
  assert(out.wrong[0] === 403 && out.wrong[1] === 'csrf_rejected', `a POST with a wrong CSRF header: ${out.wrong}`)
  assert(out.right === 201 || out.right === 200, `a POST with the session's CSRF header: ${out.right}`)
  assert(out.del === 204 || out.del === 200, `a DELETE with the session's CSRF header: ${out.del}`)

  // Another origin (the media server's) with the user's cookies: a simple
  // cross-origin POST (no preflight) is refused, and API answers cannot be
  // read there.
  await page.goto(env.mediaOrigin + '/')
  const cross = await page.evaluate(async (base) => {
    await fetch(base + '/api/v2/channels/groups', {
      method: 'POST',
      mode: 'no-cors',
      credentials: 'include',
      headers: { 'Content-Type': 'text/plain' },
      body: JSON.stringify({ groupKey: 'csrf-probe', name: 'cross-site' }),
    }).catch(() => {})
    let readable = true
    try {
      await (await fetch(base + '/api/v2/auth/me', { credentials: 'include' })).json()
    } catch {
      readable = false
    }
    return { readable }
  }, env.base)
  assert(!cross.readable, 'the API is not readable from another origin')
  await page.goto(env.base + '/')
  const groups = await page.evaluate(async () => (await (await fetch('/api/v2/channels/groups?pageSize=200')).json()).rows.map((g) => g.groupKey))
  assert(!groups.includes('csrf-probe'), 'a cross-origin POST with the cookies created nothing')
  await page.close()
}

/** probeCSP checks the policy in force: inline and foreign scripts and framing refused. */
export async function probeCSP(context) {
  const page = await context.newPage()
  await page.goto(env.base + '/login')
  const r = await page.evaluate(async (media) => {
    const seen = []
    document.addEventListener('securitypolicyviolation', (e) => seen.push(e.effectiveDirective))
    const inline = document.createElement('script')
    inline.textContent = 'window.__inlineRan = true'
    document.head.append(inline)
    const foreign = document.createElement('script')
    foreign.src = media + '/probe.js'
    document.head.append(foreign)
    await new Promise((res) => setTimeout(res, 500))
    return { inlineRan: window.__inlineRan === true, seen }
  }, env.mediaOrigin)
  assert(!r.inlineRan, 'an injected inline script ran')
  assert(r.seen.filter((d) => d.startsWith('script-src')).length >= 2, `CSP reported the refused scripts: ${r.seen}`)
  await page.goto('about:blank')
  await page.setContent(`<iframe src="${env.base}/login" title="probe"></iframe>`)
  await page.waitForTimeout(1500)
  const framed = page.frames().find((f) => f !== page.mainFrame())
  const framedTitle = framed ? await framed.evaluate(() => document.title).catch(() => '') : ''
  assert(!framedTitle.includes('svc console'), 'the console rendered inside a frame')
  await page.close()
}

/**
 * probeCaptcha runs last (the failures it makes put this client address
 * under the captcha for 15 minutes): repeated wrong passwords make the
 * server ask for a captcha; the form shows it, the error shows the
 * contract's message, code and trace id, and "Another picture" replaces it.
 */
export async function probeCaptcha(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } })
  const page = await context.newPage()
  await page.goto(env.base + '/login')
  let shown = false
  for (let i = 0; i < 8 && !shown; i++) {
    await page.fill('#l-user', 'admin')
    await page.fill('#l-pass', `wrong-password-${i}`)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('alert').waitFor()
    shown = (await page.locator('.captcha img').count()) > 0
  }
  assert(shown, 'no captcha after repeated failures')
  const alert = await page.getByRole('alert').textContent()
  assert(/(invalid_credentials|captcha_required)/.test(alert) && /trace id [0-9a-f]{32}/.test(alert), `the error shows its code and trace id: ${alert}`)
  const img = page.locator('.captcha img')
  await until('the captcha image', () => img.evaluate((i) => i.complete && i.naturalWidth > 0))
  const first = await img.getAttribute('src')
  await page.getByRole('button', { name: 'Another picture' }).click()
  await until('another captcha', async () => (await img.getAttribute('src')) !== first)
  await until('the new captcha image', () => img.evaluate((i) => i.complete && i.naturalWidth > 0))
  await context.close()
}
