// The second run, as a user with the built-in Viewer role: every page and
// tab it can reach shows data and no control it may not use, and not one
// request answers 403 (or fails at all).
import { assert, axe, env, expectPlaying, nav, until, watch } from './lib.mjs'
import { viewer } from './admin.mjs'

// Controls that change something; a viewer sees none of them.
const changing = /^(New |Delete|Edit|Start|Stop|Pause|Retry|Activate|Return to pending|Send test|Import|Enroll|Run…|Rotate|Reveal|Revoke|Reset password|End sessions|Archive|Schedule|Plan the change|Apply|Restart|Reload|Cancel the command|Deliver again|Change password$)/

export async function viewerRun(browser, results) {
  // This browser lives in Tokyo: the console shows times in its zone.
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 }, timezoneId: 'Asia/Tokyo', locale: 'en-GB' })
  const page = await context.newPage()
  const log = watch(page, 'viewer')
  results.logs.push(log)
  await page.goto(env.base + '/')
  await page.fill('#l-user', viewer.username)
  await page.fill('#l-pass', viewer.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor()
  await until('the dashboard data', async () => (await page.textContent('[data-test=servers-online]'))?.trim() === '1 / 1', 30_000)

  const titles = await page.getByRole('navigation', { name: 'Main' }).getByRole('link').allInnerTexts()
  assert(!titles.includes('Security'), `a viewer sees Security: ${titles}`)
  const seen = []
  for (const title of titles) {
    await nav(page, title)
    const tabNames = await page.getByRole('tab').allInnerTexts()
    for (const t of tabNames.length ? tabNames : ['']) {
      if (t) await page.getByRole('tab', { name: t }).click()
      await page.waitForLoadState('networkidle').catch(() => {})
      await page.waitForTimeout(800)
      const buttons = (await page.locator('main button, main a.button').allInnerTexts()).map((b) => b.trim())
      const bad = buttons.filter((b) => changing.test(b))
      assert(!bad.length, `${title}${t ? ' / ' + t : ''} shows ${bad.join(', ')} to a viewer`)
      seen.push(`${title}${t ? ' / ' + t : ''}`)
      results.a11y.push(...(await axe(page, `viewer ${title} ${t}`)))
    }
  }
  results.viewerPages = seen

  // Times are the browser's: Tokyo's wall clock for the stored UTC instant.
  await nav(page, 'Channels')
  await page.locator('tr[data-channel="Gate camera"] time').first().waitFor()
  const times = await page.$$eval('main time', (els) =>
    els.map((e) => ({
      shown: e.textContent,
      tokyo: new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'medium', timeZone: 'Asia/Tokyo' }).format(new Date(e.dateTime)),
    })),
  )
  assert(times.length > 0 && times.every((t) => t.shown === t.tokyo), `times in the browser's zone: ${JSON.stringify(times.slice(0, 2))}`)

  // A viewer plays live video (streams.play).
  await nav(page, 'Channels')
  await page.locator('tr[data-channel="Gate camera"]').getByRole('link', { name: 'Watch' }).click()
  await expectPlaying(page, '.tile[data-tile="0"]', 'viewer HTTP-FLV')
  await page.click('[data-test=logout]')
  await page.getByRole('heading', { name: 'Sign in' }).waitFor()
  const forbidden = log.responses.filter((r) => r.status === 403)
  assert(!forbidden.length, `the viewer got 403 for ${forbidden.map((r) => r.method + ' ' + r.url).join(', ')}`)
  results.viewerRequests = log.responses.length
  await context.close()
}
