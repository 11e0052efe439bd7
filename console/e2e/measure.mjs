// The first-load figures of the benchmark: compressed JavaScript the login
// page transfers (cold cache), when its form is usable, and how long the
// dashboard takes to show its data after "Sign in" and after a reload.
import { assert, env } from './lib.mjs'

export async function measureLogin(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } })
  const page = await context.newPage()
  const scripts = []
  page.on('response', (r) => {
    if (r.request().resourceType() === 'script') scripts.push(r)
  })
  await page.goto(env.base + '/', { waitUntil: 'load' })
  await page.locator('#l-user').waitFor()
  const formReadyMs = await page.evaluate(() => performance.now())
  let encoded = 0
  let decoded = 0
  for (const r of scripts) {
    const sizes = await r.request().sizes()
    encoded += sizes.responseBodySize
    decoded += (await r.body()).length
    assert(r.headers()['content-encoding'] === 'gzip', `${r.url()} was not sent compressed`)
  }
  return { context, page, figures: { loginScripts: scripts.length, loginJsBytesCompressed: encoded, loginJsBytesDecoded: decoded, loginFormReadyMs: round(formReadyMs) } }
}

/** signInTimed signs in and times the dashboard until its data shows. */
export async function signInTimed(page, username, password) {
  await page.fill('#l-user', username)
  await page.fill('#l-pass', password)
  const t0 = await page.evaluate(() => performance.now())
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForFunction(() => (document.querySelector('[data-test=servers-online]')?.textContent ?? '').includes('/'), null, { polling: 'raf', timeout: 30_000 })
  const t1 = await page.evaluate(() => performance.now())
  return round(t1 - t0)
}

/** reloadTimed reloads the dashboard (warm cache) and times it until its data shows. */
export async function reloadTimed(page) {
  await page.reload({ waitUntil: 'commit' })
  await page.waitForFunction(() => (document.querySelector('[data-test=servers-online]')?.textContent ?? '').includes('/'), null, { polling: 'raf', timeout: 30_000 })
  return round(await page.evaluate(() => performance.now()))
}

const round = (v) => Math.round(v * 10) / 10
