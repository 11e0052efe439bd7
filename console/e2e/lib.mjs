// Shared pieces of the console's browser test: Debian's Chromium through
// playwright-core, a monitor of every page's console, errors, CSP
// violations and network answers, axe, and small waiting helpers.
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { chromium } from 'playwright-core'

const require = createRequire(import.meta.url)
const axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8')

export const env = {
  base: must('SVC_URL'),
  adminPassword: process.env.SVC_ADMIN_PASSWORD ?? '',
  cameraUrl: process.env.CAMERA_URL ?? '',
  cameraUser: process.env.CAMERA_USER ?? '',
  cameraPassword: process.env.CAMERA_PASSWORD ?? '',
  receiverUrl: process.env.RECEIVER_URL ?? '',
  webhookSecret: process.env.WEBHOOK_SECRET ?? '',
  mediaOrigin: process.env.MEDIA_ORIGIN ?? '',
  shots: process.env.SCREENSHOT_DIR ?? '',
  chromium: process.env.CHROMIUM ?? '/usr/bin/chromium',
}

function must(name) {
  const v = process.env[name]
  if (!v) throw new Error(`${name} is not set`)
  return v
}

/**
 * launch starts Chromium with the flags this machine needs; playwright-core
 * gives every launch a fresh, empty profile (its own --user-data-dir).
 */
export async function launch() {
  if (!fs.existsSync(env.chromium)) throw new Error(`${env.chromium} is missing (scripts/install-deps.sh test installs Debian's chromium)`)
  const browser = await chromium.launch({
    executablePath: env.chromium,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--autoplay-policy=no-user-gesture-required',
    ],
  })
  return {
    browser,
    async close() {
      await browser.close()
    },
  }
}

/**
 * watch records what a page reports: console errors, uncaught exceptions,
 * CSP violations, failed requests and every answer of the API with its
 * status. Pages of the normal flows must end with none of the first four
 * and no 403 at all.
 */
export function watch(page, name) {
  // mediaOutage is set while the test itself takes a stream away: the
  // players' failed media requests are then expected.
  const log = { name, consoleErrors: [], pageErrors: [], cspViolations: [], failedRequests: [], responses: [], mediaOutage: false }
  const outage = (url) => log.mediaOutage && env.mediaOrigin && url.startsWith(env.mediaOrigin)
  page.on('console', (m) => {
    if (m.type() === 'error' && outage(m.location()?.url ?? '')) return
    if (m.type() === 'error') log.consoleErrors.push(m.text())
    if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) log.cspViolations.push(m.text())
  })
  page.on('pageerror', (e) => log.pageErrors.push(String(e)))
  page.on('requestfailed', (r) => {
    const why = r.failure()?.errorText ?? ''
    // A player torn down by the test aborts its long media response.
    if (!why.includes('ERR_ABORTED') && !outage(r.url())) log.failedRequests.push(`${r.method()} ${r.url()}: ${why}`)
  })
  page.on('response', (r) => {
    const u = r.url()
    if (u.startsWith(env.base)) log.responses.push({ method: r.request().method(), url: u.slice(env.base.length), status: r.status() })
  })
  return log
}

/** problems lists what a watched page must not have had. */
export function problems(log, { allowStatus = () => false } = {}) {
  const out = []
  for (const e of log.consoleErrors) out.push(`console error: ${e}`)
  for (const e of log.pageErrors) out.push(`uncaught: ${e}`)
  for (const e of log.failedRequests) out.push(`request failed: ${e}`)
  for (const r of log.responses) {
    if (r.status >= 400 && !allowStatus(r)) out.push(`HTTP ${r.status} for ${r.method} ${r.url}`)
  }
  return out.map((p) => `[${log.name}] ${p}`)
}

/** axe runs axe-core in the page and returns the serious and critical violations. */
export async function axe(page, where) {
  const has = await page.evaluate(() => typeof window.axe !== 'undefined')
  // Evaluated through the DevTools protocol: the page's CSP (rightly)
  // refuses an injected inline <script>.
  if (!has) await page.evaluate(axeSource)
  const res = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] })
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }))
  })
  return res.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => ({ where, ...v }))
}

export async function shot(page, name) {
  if (env.shots) await page.screenshot({ path: path.join(env.shots, `${name}.png`), fullPage: true })
}

export function assert(cond, msg) {
  if (!cond) throw new Error(`assertion failed: ${msg}`)
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** until polls fn until it returns a truthy value. */
export async function until(what, fn, timeoutMs = 30_000, everyMs = 250) {
  const end = Date.now() + timeoutMs
  let last
  for (;;) {
    try {
      last = await fn()
      if (last) return last
    } catch (e) {
      last = e
    }
    if (Date.now() > end) throw new Error(`${what} did not happen within ${timeoutMs / 1000} s (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`)
    await sleep(everyMs)
  }
}

/** nav follows a link of the main navigation, as a user clicks it. */
export async function nav(page, title) {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: title, exact: true }).click()
  await page.getByRole('heading', { level: 1, name: title }).waitFor()
}

/** tabs lists the tabs of the page's tab bar. */
export async function tabs(page) {
  return page.getByRole('tab').allInnerTexts()
}

/** frame reads the playing video of a tile: time, size and a canvas grab. */
export async function videoState(page, selector = '.tile video') {
  return page.$eval(selector, (v) => {
    const out = { currentTime: v.currentTime, readyState: v.readyState, width: v.videoWidth, height: v.videoHeight, error: v.error?.message ?? '' }
    if (v.videoWidth && v.readyState >= 2) {
      const c = document.createElement('canvas')
      c.width = v.videoWidth
      c.height = v.videoHeight
      const g = c.getContext('2d')
      g.drawImage(v, 0, 0)
      const px = g.getImageData(0, 0, c.width, c.height).data
      let bright = 0
      let max = 0
      let sum = 0
      for (let i = 0; i < px.length; i += 4) {
        const y = 0.299 * px[i] + 0.587 * px[i + 1] + 0.114 * px[i + 2]
        sum += y
        if (y > max) max = y
        if (y > 100) bright++
      }
      const n = px.length / 4
      Object.assign(out, { meanLuma: sum / n, maxLuma: max, brightShare: bright / n })
    }
    return out
  })
}

/** plays checks a tile plays: time advancing and a frame that is not black. */
export async function expectPlaying(page, selector, label) {
  await until(`${label}: the player says playing`, async () => (await page.getAttribute(`${selector} .player`, 'data-phase')) === 'playing', 45_000)
  // Playing means media time keeps up with the clock: 2 s of video within 6 s of wall time. A
  // player that has just started (hls.js fetches a playlist and a segment before the clock runs)
  // or a loaded machine may lag a moment; a stalled player never gets there.
  const a = await videoState(page, `${selector} video`)
  const started = Date.now()
  let b = a
  while (b.currentTime - a.currentTime < 2 && Date.now() - started < 6000) {
    await sleep(500)
    b = await videoState(page, `${selector} video`)
  }
  const waited = ((Date.now() - started) / 1000).toFixed(1)
  assert(b.currentTime - a.currentTime >= 2, `${label}: video.currentTime advanced ${a.currentTime} -> ${b.currentTime} in ${waited} s`)
  assert(b.maxLuma > 150 && b.brightShare > 0.001, `${label}: the frame is black (max luma ${b.maxLuma}, bright share ${b.brightShare})`)
  return b
}
