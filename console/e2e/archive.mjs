// The administrator's recordings, devices and rooms pages: the demo
// channel is recorded through the API (svc dev does not record on its own),
// its files are listed on the Recordings page and one plays in the page's
// player (time advancing, a frame that is not black), a cut/merge of the
// range succeeds, a file is soft-deleted and restored, the recording
// volumes show the dev media host; the
// GB28181 devices page renders, a room made through the API is listed and
// closed on the meeting rooms page. axe on each.
import { assert, axe, nav, shot, until, videoState } from './lib.mjs'
import { env } from './lib.mjs'

async function csrfOf(page) {
  return (await page.evaluate(() => sessionStorage.getItem('svc.csrf'))) ?? ''
}

/** startDemoRecording records the demo channel in short files; it returns the channel id. */
export async function startDemoRecording(page) {
  const list = await (await page.request.get(`${env.base}/api/v2/channels?stream=demo`)).json()
  const demo = list.rows?.find((c) => c.stream === 'demo')
  assert(demo, `the demo channel exists: ${JSON.stringify(list).slice(0, 200)}`)
  const r = await page.request.post(`${env.base}/api/v2/recording/start`, {
    headers: { 'X-Svc-Csrf-Token': await csrfOf(page) },
    data: { channelId: demo.channelId, segmentSeconds: 4 },
  })
  assert(r.ok(), `starting the demo recording: ${r.status()} ${await r.text()}`)
  return demo.channelId
}

export async function archivePages(page, demoChannelId, a11y) {
  await nav(page, 'Recordings')
  await page.selectOption('#rec-channel', demoChannelId)
  // The list reloads every 10 s with a range that ends now.
  const rows = page.locator('[data-test=files] tbody tr')
  await until('the demo channel’s files listed', async () => (await rows.count()) >= 2, 120_000, 1000)
  const first = rows.first()
  const text = await first.textContent()
  assert(/\d+\.\d s/.test(text) && /(KiB|MiB)/.test(text) && text.includes('Completed'), `a file row shows duration, size and state: ${text}`)
  assert((await page.locator('.timeline-file').count()) >= 2, 'the files are on the timeline')
  await first.getByRole('button', { name: /^Play/ }).click()
  const player = '.player[data-file]'
  await until('the recording plays', async () => (await page.getAttribute(player, 'data-phase')) === 'playing', 45_000)
  // A file's media time need not start at 0 (it keeps the stream's
  // timestamps): a second of it plays from where playing began.
  const s0 = await videoState(page, `${player} video`)
  const v = await until(
    'a second of the recording with a frame',
    async () => {
      const s = await videoState(page, `${player} video`)
      return s.currentTime - s0.currentTime >= 1 && s.maxLuma !== undefined ? s : null
    },
    30_000,
    250,
  )
  assert(v.maxLuma > 150 && v.brightShare > 0.001, `the recording's frame is black (max luma ${v.maxLuma}, bright share ${v.brightShare})`)
  assert((await first.getByRole('link', { name: /^Download/ }).getAttribute('href'))?.endsWith('/download'), 'a download link')
  await shot(page, 'recordings')

  // One file out of the recording's files: the range's join on the media server.
  await page.click('[data-test=cut-merge]')
  await until(
    'the cut/merge task ended',
    async () => ['Succeeded', 'Failed'].includes(await page.getAttribute('[data-test=cut-task]', 'data-status').catch(() => '')),
    120_000,
    1000,
  )
  assert((await page.getAttribute('[data-test=cut-task]', 'data-status')) === 'Succeeded', `cut/merge: ${await page.textContent('[data-test=cut-task]')}`)
  await page.locator('[data-test=cut-download]').waitFor()

  // Soft-delete a file from the list, find it among the soft-deleted ones,
  // restore it.
  const fileId = await rows.last().getAttribute('data-file')
  const row = page.locator(`[data-test=files] tr[data-file="${fileId}"]`)
  page.once('dialog', (d) => void d.accept())
  await row.getByRole('button', { name: /^Delete/ }).click()
  await until('the deleted file left the list', async () => (await row.count()) === 0, 30_000, 500)
  await page.selectOption('#rec-state', 'SoftDeleted')
  await until('the file among the soft-deleted', async () => (await row.count()) === 1 && (await row.textContent()).includes('SoftDeleted'), 30_000, 500)
  await row.getByRole('button', { name: /^Restore/ }).click()
  await until('the restored file left the soft-deleted list', async () => (await row.count()) === 0, 30_000, 500)
  await page.selectOption('#rec-state', 'Completed')
  await until('the restored file listed again', async () => (await row.count()) === 1, 30_000, 500)

  // The dev media host's recording volume.
  await until('the recording volume', async () => (await page.locator('[data-test=disks] tr[data-disk="dev-media"]').count()) === 1, 60_000, 1000)
  const disk = await page.textContent('[data-test=disks] tr[data-disk="dev-media"]')
  assert(/Normal|LowSpace|Full/.test(disk) && disk.includes('free of'), `the volume's state and space: ${disk}`)
  // One axe pass over the whole page: the player, the task and the volumes shown.
  a11y.push(...(await axe(page, 'recordings')))

  const stop = await page.request.post(`${env.base}/api/v2/recording/stop`, {
    headers: { 'X-Svc-Csrf-Token': await csrfOf(page) },
    data: { channelId: demoChannelId },
  })
  assert(stop.ok(), `stopping the demo recording: ${stop.status()}`)

  await nav(page, 'GB28181 devices')
  await page.locator('[data-test=devices], [data-test=no-devices]').first().waitFor()
  a11y.push(...(await axe(page, 'devices')))
  await shot(page, 'devices')

  // A room made through the API is listed, shows it has no recordings, and
  // closes from the page (after the confirmation).
  const made = await page.request.post(`${env.base}/api/v2/rtc/rooms`, { headers: { 'X-Svc-Csrf-Token': await csrfOf(page) }, data: { name: 'Standup' } })
  assert(made.ok(), `creating a room: ${made.status()} ${await made.text()}`)
  await nav(page, 'Meeting rooms')
  const room = page.locator('tr[data-room="Standup"]')
  await room.waitFor()
  assert((await room.textContent()).includes('Open'), `the new room is Open: ${await room.textContent()}`)
  await room.getByRole('button', { name: 'Recordings of Standup' }).click()
  await page.getByText('The room has not been recorded.').waitFor()
  a11y.push(...(await axe(page, 'rooms')))
  await shot(page, 'rooms')
  page.once('dialog', (d) => void d.accept())
  await room.getByRole('button', { name: 'Close Standup' }).click()
  await until('the room Closed', async () => (await room.textContent()).includes('Closed'), 30_000, 500)
}
