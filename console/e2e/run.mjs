// The console's browser test, run by test/consolerun with a real `svc dev`,
// a GStreamer camera and a webhook receiver it started: `node e2e/run.mjs
// full` runs the administrator's and the viewer's scenarios; `node
// e2e/run.mjs bench N` measures the first load N times. The results go to
// RESULT_FILE as JSON; any failure exits non-zero.
import fs from 'node:fs'
import { adminRun } from './admin.mjs'
import { launch, problems } from './lib.mjs'
import { measureLogin, reloadTimed, signInTimed } from './measure.mjs'
import { viewerRun } from './viewer.mjs'
import { probeCaptcha } from './probes.mjs'
import { env } from './lib.mjs'

const mode = process.argv[2] ?? 'full'
const results = { mode, figures: {}, a11y: [], logs: [], problems: [], runs: [] }
const out = process.env.RESULT_FILE
const t0 = Date.now()
let failure = null
let close = async () => {}
try {
  const launched = await launch()
  close = launched.close
  const browser = launched.browser
  results.browser = browser.version()
  if (mode === 'bench') {
    const n = Number(process.argv[3] ?? 5)
    for (let i = 0; i < n; i++) {
      const { context, page, figures } = await measureLogin(browser)
      figures.dashboardAfterSignInMs = await signInTimed(page, 'admin', env.adminPassword)
      figures.dashboardReloadMs = await reloadTimed(page)
      results.runs.push(figures)
      await context.close()
    }
  } else {
    await adminRun(browser, results)
    await viewerRun(browser, results)
    await probeCaptcha(browser)
    for (const log of results.logs) results.problems.push(...problems(log))
    if (results.a11y.length) failure = new Error(`axe found ${results.a11y.length} serious or critical violations`)
    if (results.problems.length) failure ??= new Error(`the pages reported ${results.problems.length} problems`)
  }
} catch (e) {
  failure = e
} finally {
  results.seconds = Math.round((Date.now() - t0) / 1000)
  results.error = failure ? String(failure.stack ?? failure) : ''
  // The logs are long; keep what a failure needs.
  results.logs = results.logs.map((l) => ({ name: l.name, requests: l.responses.length }))
  if (out) fs.writeFileSync(out, JSON.stringify(results, null, 2))
  await close()
}
if (failure) {
  console.error(failure)
  for (const p of results.problems) console.error(p)
  for (const v of results.a11y) console.error(`axe ${v.impact} ${v.id} on ${v.where}: ${v.help} ${v.nodes.join(' | ')}`)
  process.exit(1)
}
console.log(JSON.stringify({ seconds: results.seconds, figures: results.figures, runs: results.runs }, null, 1))
