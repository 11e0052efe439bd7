// Small composables shared by the pages.
import { onBeforeUnmount, onMounted, ref, shallowRef, type Ref } from 'vue'

export interface Async<T> {
  data: Ref<T | undefined>
  error: Ref<unknown>
  loading: Ref<boolean>
  reload: () => Promise<void>
}

/**
 * useAsync loads data when the component mounts (and every `every` ms when
 * given), keeping the last good data while a reload runs or fails.
 */
export function useAsync<T>(load: () => Promise<T>, opts: { every?: number; immediate?: boolean } = {}): Async<T> {
  const data = shallowRef<T>()
  const error = ref<unknown>(null)
  const loading = ref(false)
  let seq = 0
  let timer: ReturnType<typeof setInterval> | undefined
  async function reload() {
    const mine = ++seq
    loading.value = true
    try {
      const v = await load()
      if (mine === seq) {
        data.value = v
        error.value = null
      }
    } catch (e) {
      if (mine === seq) error.value = e
    } finally {
      if (mine === seq) loading.value = false
    }
  }
  onMounted(() => {
    // immediate false: the caller loads when it wants to (and nothing repeats).
    if (opts.immediate === false) return
    void reload()
    if (opts.every) timer = setInterval(() => void reload(), opts.every)
  })
  onBeforeUnmount(() => {
    seq++
    clearInterval(timer)
  })
  return { data: data as Ref<T | undefined>, error, loading, reload }
}

/** useAction runs one user action at a time and keeps its error. */
export function useAction() {
  const busy = ref(false)
  const error = ref<unknown>(null)
  async function run<T>(fn: () => Promise<T>): Promise<T | undefined> {
    busy.value = true
    error.value = null
    try {
      return await fn()
    } catch (e) {
      error.value = e
      return undefined
    } finally {
      busy.value = false
    }
  }
  return { busy, error, run }
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' })
const timeOnly = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' })

/** formatTime shows a contract timestamp in the browser's time zone. */
export function formatTime(iso: string | null | undefined, short = false): string {
  if (!iso) return '—'
  const d = new Date(iso)
  if (Number.isNaN(d.getTime()) || d.getUTCFullYear() <= 1) return '—'
  return (short ? timeOnly : dateTime).format(d)
}

export function formatBytes(n: number | null | undefined): string {
  if (n == null) return '—'
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let v = n
  let i = 0
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024
    i++
  }
  return `${v.toFixed(i ? 1 : 0)} ${units[i]}`
}

export function formatPercent(n: number | null | undefined): string {
  return n == null ? '—' : `${n.toFixed(1)} %`
}

/** download saves text as a file through a blob: link. */
export function download(name: string, text: string, type = 'application/json') {
  const url = URL.createObjectURL(new Blob([text], { type }))
  const a = document.createElement('a')
  a.href = url
  a.download = name
  document.body.append(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 1000)
}
