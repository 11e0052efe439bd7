// The administrator's run: sign in, the dev media host online, an RTSP
// channel on the GStreamer camera started and watched in every protocol
// and a 2×2 wall (time advancing, a frame that is not black), snapshots,
// export and import with the preview, an API token shown once, a viewer
// user, a delivery plan with a test delivery that reaches the test's
// receiver, the outbox and the live feed, the node and system pages,
// the recordings, devices and rooms pages (archive.mjs), keyboard use, a
// tablet-wide screen, axe on every page, sign out.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { assert, axe, env, expectPlaying, nav, shot, sleep, until, watch } from './lib.mjs'
import { measureLogin, reloadTimed, signInTimed } from './measure.mjs'
import { probeCookies, probeCSP, probeCSRF, probeHeaders } from './probes.mjs'
import { archivePages, startDemoRecording } from './archive.mjs'

export const viewer = { username: 'viewer1', password: 'viewer-Pa55word-1' }

export async function adminRun(browser, results) {
  const a11y = []
  const { context, page, figures } = await measureLogin(browser)
  Object.assign(results.figures, figures)
  const log = watch(page, 'admin')
  results.logs.push(log)
  a11y.push(...(await axe(page, 'login')))
  await shot(page, 'login')
  results.figures.dashboardAfterSignInMs = await signInTimed(page, 'admin', env.adminPassword)
  await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor()
  results.figures.dashboardReloadMs = await reloadTimed(page)

  // The dev media host is online without enrolling anything.
  await until('the dev media host online', async () => (await page.textContent('[data-test=servers-online]'))?.trim() === '1 / 1', 60_000)
  await page.locator('[data-test=media-servers]').getByText('dev-media').waitFor()
  a11y.push(...(await axe(page, 'dashboard')))
  await shot(page, 'dashboard')

  await probeHeaders(page)
  await probeCookies(context, page)
  await probeCSRF(context)
  await probeCSP(context)

  await keyboard(page)

  // Recorded while the rest of the run goes on; the Recordings page reads it later.
  const demoChannelId = await startDemoRecording(page)

  // A channel on the GStreamer camera, credentials typed in their own fields.
  await nav(page, 'Channels')
  await page.click('[data-test=new-channel]')
  const dlg = page.getByRole('dialog')
  await dlg.locator('#cf-name').fill('Gate camera')
  await dlg.locator('#cf-stream').fill('gate')
  await dlg.locator('#cf-url').fill(env.cameraUrl)
  await dlg.locator('#cf-user').fill(env.cameraUser)
  await dlg.locator('#cf-pass').fill(env.cameraPassword)
  a11y.push(...(await axe(page, 'channel form')))
  await dlg.getByRole('button', { name: 'Create channel' }).click()
  const row = page.locator('tr[data-channel="Gate camera"]')
  await row.waitFor()
  assert(!(await page.content()).includes(env.cameraPassword), 'the camera password is shown')
  assert((await row.textContent()).includes('***@'), 'the source URL is masked')
  await row.getByRole('button', { name: 'Start Gate camera' }).click()
  await until('Gate camera Online', async () => (await row.locator('[data-test="state-Gate camera"]').textContent())?.trim() === 'Online', 90_000, 1000)
  a11y.push(...(await axe(page, 'channels')))
  await shot(page, 'channels')
  const channelId = (await row.getByRole('link', { name: 'Gate camera' }).getAttribute('href')).split('/').pop()

  // A second tab keeps watching through a lease renewal (renewAfter is about
  // 42 s into a 60 s lease) while the rest of the run goes on.
  const watcher = await context.newPage()
  const watcherLog = watch(watcher, 'admin live tab')
  results.logs.push(watcherLog)
  await watcher.goto(`${env.base}/live?channel=${channelId}`)
  const watchStarted = Date.now()

  // Watch it: HTTP-FLV, then HTTP-fMP4 and HLS, then a 2×2 wall.
  await row.getByRole('link', { name: 'Watch' }).click()
  await page.getByRole('heading', { level: 1, name: 'Live view' }).waitFor()
  const tile0 = '.tile[data-tile="0"]'
  results.figures.flv = await expectPlaying(page, tile0, 'HTTP-FLV')
  await shot(page, 'live-flv')
  a11y.push(...(await axe(page, 'live view')))
  for (const p of ['http-fmp4', 'hls']) {
    await page.selectOption('#live-proto', p)
    results.figures[p] = await expectPlaying(page, tile0, p)
  }
  await page.selectOption('#live-proto', 'http-flv')
  await page.getByRole('radio', { name: '4' }).check()
  await page.selectOption('#tile-2', { label: 'Demo camera' })
  await expectPlaying(page, tile0, 'wall tile 1')
  await expectPlaying(page, '.tile[data-tile="1"]', 'wall tile 2')
  await shot(page, 'live-wall')

  // A broken connection heals by itself: the channel stops (its players
  // lose the stream) and starts again; the tiles reconnect with their lease.
  const csrf0 = await page.evaluate(() => sessionStorage.getItem('svc.csrf'))
  const post = (p) => page.request.post(env.base + p, { headers: { 'X-Svc-Csrf-Token': csrf0 ?? '' } })
  log.mediaOutage = watcherLog.mediaOutage = true
  assert((await post(`/api/v2/channels/${channelId}/stop`)).ok(), 'stopping the channel')
  await until('the tile notices the outage', async () => (await page.getAttribute(`${tile0} .player`, 'data-phase')) !== 'playing', 30_000)
  assert((await post(`/api/v2/channels/${channelId}/start`)).ok(), 'starting the channel again')
  await expectPlaying(page, tile0, 'after the source came back')
  await expectPlaying(watcher, tile0, 'the other tab after the source came back')
  log.mediaOutage = watcherLog.mediaOutage = false

  const archiveStarted = Date.now()
  await archivePages(page, demoChannelId, a11y)
  // What the recordings, devices and rooms pages add to the run (its whole budget is 5 minutes).
  results.figures.archivePagesSeconds = Math.round((Date.now() - archiveStarted) / 1000)

  // The channel's page: snapshots on a schedule, the runtime log.
  await nav(page, 'Channels')
  await page.locator('tr[data-channel="Gate camera"]').getByRole('link', { name: 'Gate camera' }).click()
  await page.getByRole('heading', { level: 1, name: 'Gate camera' }).waitFor()
  await page.getByRole('button', { name: 'Schedule' }).click()
  await page.getByLabel('Take snapshots').check()
  await page.fill('#snap-int', '10')
  await page.getByRole('button', { name: 'Save', exact: true }).click()
  await until('a snapshot', async () => page.$eval('img.snapshot', (i) => i.complete && i.naturalWidth > 0).catch(() => false), 60_000, 1000)
  a11y.push(...(await axe(page, 'channel')))
  await shot(page, 'channel')

  // Export, then import the same catalogue: the preview first.
  await nav(page, 'Channels')
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export' }).click()])
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-export-')), 'channels.json')
  await download.saveAs(file)
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'))
  assert(doc.channels.some((c) => c.name === 'Gate camera') && !JSON.stringify(doc).includes(env.cameraPassword), 'the export has the channel, not its password')
  await page.getByRole('button', { name: 'Import' }).click()
  await page.setInputFiles('#imp-file', file)
  await page.locator('[data-test=import-preview]').waitFor()
  a11y.push(...(await axe(page, 'import preview')))
  await page.getByRole('dialog').getByRole('button', { name: 'Import' }).click()
  await page.getByRole('dialog').getByText('Imported:').waitFor()
  await page.getByRole('dialog').getByRole('button', { name: 'Close' }).click()

  // An API token, shown once.
  await nav(page, 'Security')
  a11y.push(...(await axe(page, 'users')))
  await page.getByRole('tab', { name: 'API tokens' }).click()
  await page.click('[data-test=new-token]')
  await page.fill('#tf-name', 'crm-sync')
  await page.fill('#tf-purpose', 'CRM backend')
  for (const p of ['channels.view', 'streams.view']) await page.locator('label.inline', { has: page.locator('code', { hasText: new RegExp(`^${p}$`) }) }).locator('input').check()
  a11y.push(...(await axe(page, 'token form')))
  await page.getByRole('button', { name: 'Create token' }).click()
  const secret = page.getByRole('dialog', { name: 'Token crm-sync' })
  const token = await secret.getByLabel('API token').inputValue()
  assert(token.startsWith('svc_pat_'), `the new token is shown: ${token.slice(0, 8)}`)
  a11y.push(...(await axe(page, 'token shown once')))
  await secret.locator('[data-test=secret-done]').click()
  await page.locator('tr[data-token="crm-sync"]').waitFor()
  assert(!(await page.content()).includes(token), 'the token is still on the page after it was shown')
  assert((await page.locator('tr[data-token="crm-sync"]').getByRole('button', { name: 'Reveal crm-sync' }).count()) === 0, 'a token created without reveal offers reveal')
  const caps = await (await fetch(env.base + '/api/v2/third-party/capabilities', { headers: { Authorization: `Bearer ${token}` } })).json()
  assert(caps.permissions?.length === 2, `the token works with its two permissions: ${JSON.stringify(caps)}`)
  a11y.push(...(await axe(page, 'tokens')))

  // A viewer for the second run.
  await page.getByRole('tab', { name: 'Users' }).click()
  await page.click('[data-test=new-user]')
  await page.fill('#uf-name', viewer.username)
  await page.fill('#uf-pass', viewer.password)
  await page.fill('#uf-display', 'Viewer One')
  await page.getByRole('dialog').getByLabel('Viewer', { exact: true }).check()
  await page.getByRole('dialog').getByRole('button', { name: 'Save' }).click()
  await page.locator('[data-test=users]').getByText(viewer.username).waitFor()
  for (const t of ['Roles', 'RTSP credentials', 'Audit log']) {
    await page.getByRole('tab', { name: t }).click()
    await page.getByRole('tabpanel').locator('table, p').first().waitFor()
    a11y.push(...(await axe(page, t)))
  }
  await shot(page, 'security-audit')

  // A delivery plan and a test delivery to the receiver.
  await nav(page, 'Events and webhooks')
  await page.click('[data-test=new-plan]')
  await page.fill('#pf-name', 'crm receiver')
  await page.fill('#pf-endpoint', env.receiverUrl)
  await page.fill('#pf-secret', env.webhookSecret)
  await page.getByLabel('Allow plain HTTP (isolated networks only)').check()
  await page.fill('#pf-extra', 'media.stream.*')
  a11y.push(...(await axe(page, 'plan form')))
  await page.getByRole('button', { name: 'Create plan' }).click()
  await page.locator('tr[data-plan="crm receiver"]').waitFor()
  await page.getByRole('button', { name: 'Send test delivery to crm receiver' }).click()
  await until(
    'the test delivery Completed',
    async () => (await page.locator('[data-test=deliveries] tr[data-event="system.webhook.test"]').first().textContent())?.includes('Completed'),
    40_000,
    1000,
  )
  a11y.push(...(await axe(page, 'plans')))
  await shot(page, 'plans')
  await page.getByRole('tab', { name: 'Outbox' }).click()
  await page.locator('[data-test=outbox]').getByText('system.webhook.test').first().waitFor()
  a11y.push(...(await axe(page, 'outbox')))
  await page.getByRole('tab', { name: 'Live feed' }).click()
  await until('the live feed connected', async () => (await page.textContent('[data-test=feed-state]')) === 'connected', 15_000)
  await page.locator('[data-test=feed]').getByText('hello').first().waitFor()
  a11y.push(...(await axe(page, 'live feed')))
  await page.getByRole('tab', { name: 'Engine hooks' }).click()
  await page.getByRole('tabpanel').locator('table').waitFor()
  a11y.push(...(await axe(page, 'engine hooks')))

  // Nodes: agents, commands, the engine's process and configuration.
  await nav(page, 'Nodes and media servers')
  await page.locator('[data-test=nodes]').getByText('dev-media').first().waitFor()
  a11y.push(...(await axe(page, 'nodes')))
  for (const t of ['Agents and enrollment', 'Commands']) {
    await page.getByRole('tab', { name: t }).click()
    await page.getByRole('tabpanel').locator('table').first().waitFor()
    a11y.push(...(await axe(page, t)))
  }
  await page.getByRole('tab', { name: 'Engines' }).click()
  await page.selectOption('#eng-server', 'dev-media')
  await page.getByRole('tabpanel').getByText('running').first().waitFor()
  await page.locator('#conf-text').waitFor()
  await page.getByRole('button', { name: 'Plan the change' }).click()
  await page.getByRole('heading', { name: 'Plan' }).waitFor()
  a11y.push(...(await axe(page, 'engine')))
  await shot(page, 'engine')

  // System: version, readiness with both checks, tasks, audits.
  await nav(page, 'System')
  await page.locator('[data-test=version]').waitFor()
  await until('readiness ready', async () => (await page.getByRole('region', { name: 'Readiness' }).textContent())?.includes('ready'), 15_000)
  a11y.push(...(await axe(page, 'system')))
  await shot(page, 'system')

  await tablet(page, a11y)

  // The second tab renewed its lease and kept playing.
  await until(
    'a lease renewal in the watching tab',
    () => watcherLog.responses.some((r) => r.method === 'POST' && r.url.endsWith('/renew') && r.status === 200),
    Math.max(5_000, 75_000 - (Date.now() - watchStarted)),
    1000,
  )
  await expectPlaying(watcher, tile0, 'after the lease renewal')
  await watcher.close()

  // The access cookie (one minute in this test) was refreshed before it
  // expired, with no 401 on the way (the monitor would have reported it).
  assert(log.responses.some((r) => r.method === 'POST' && r.url === '/api/v2/auth/refresh' && r.status === 200), 'the console refreshed its session')

  // Sign out: the cookies go, the old session cannot be refreshed.
  const csrf = await page.evaluate(() => sessionStorage.getItem('svc.csrf'))
  await page.click('[data-test=logout]')
  await page.getByRole('heading', { name: 'Sign in' }).waitFor()
  const left = await context.cookies()
  assert(!left.some((c) => c.name === 'svc_session' || c.name === 'svc_refresh'), 'cookies remain after sign-out')
  const after = await page.request.post(env.base + '/api/v2/auth/refresh', { headers: { 'X-Svc-Csrf-Token': csrf ?? '' } })
  assert(after.status() === 401, `refresh after sign-out: ${after.status()}`)
  results.a11y.push(...a11y)
  results.token = token
  await context.close()
}

// Keyboard: the skip link, the navigation, a dialog opened with Enter and
// closed with Escape, focus back on its button.
async function keyboard(page) {
  await page.goto(env.base + '/')
  await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor()
  await page.keyboard.press('Tab')
  assert((await page.evaluate(() => document.activeElement?.textContent)) === 'Skip to content', 'the first Tab reaches the skip link')
  await page.keyboard.press('Enter')
  await until('focus in the main content', () => page.evaluate(() => document.activeElement?.id === 'main'), 3000)
  await page.getByRole('link', { name: 'Channels', exact: true }).focus()
  await page.keyboard.press('Enter')
  await page.getByRole('heading', { level: 1, name: 'Channels' }).waitFor()
  await page.locator('[data-test=new-channel]').focus()
  await page.keyboard.press('Enter')
  await page.getByRole('dialog', { name: 'New channel' }).waitFor()
  assert(await page.evaluate(() => !!document.activeElement?.closest('dialog')), 'focus moved into the dialog')
  await page.keyboard.press('Escape')
  await until('the dialog closed', async () => (await page.getByRole('dialog').count()) === 0, 3000)
  assert(await page.evaluate(() => document.activeElement?.getAttribute('data-test') === 'new-channel'), 'focus went back to the button')
  await nav(page, 'Dashboard')
}

// A tablet in portrait: the menu folds behind a button and nothing scrolls
// sideways.
async function tablet(page, a11y) {
  await page.setViewportSize({ width: 820, height: 1180 })
  for (const title of ['Dashboard', 'Channels', 'Live view', 'Events and webhooks']) {
    await page.getByRole('button', { name: 'Menu' }).click()
    await nav(page, title)
    await sleep(500)
    const w = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth])
    assert(w[0] <= w[1], `${title} scrolls sideways at tablet width: ${w}`)
    assert(!(await page.getByRole('navigation', { name: 'Main' }).isVisible()), 'the menu stays folded after a choice')
    await shot(page, `tablet-${title.split(' ')[0].toLowerCase()}`)
  }
  a11y.push(...(await axe(page, 'tablet')))
  await page.setViewportSize({ width: 1280, height: 720 })
}
