// The three ways a lease's source plays in a browser, each loaded only when
// a tile needs it: HTTP-FLV through mpegts.js (MSE), HLS through hls.js
// (MSE; native where the browser has it) and HTTP-fMP4 natively (a
// fragmented MP4 over one long HTTP response, which Chromium, Firefox and
// Safari play from a plain <video src>).
export type Protocol = 'http-flv' | 'http-fmp4' | 'hls'

export interface Engine {
  destroy(): void
}

/** attach starts playing url in video; onFail reports a fatal error. */
export async function attach(protocol: Protocol, url: string, video: HTMLVideoElement, onFail: (why: string) => void): Promise<Engine> {
  switch (protocol) {
    case 'http-flv':
      return flv(url, video, onFail)
    case 'hls':
      return hls(url, video, onFail)
    case 'http-fmp4':
      return native(url, video, onFail)
  }
}

async function flv(url: string, video: HTMLVideoElement, onFail: (why: string) => void): Promise<Engine> {
  const mpegts = (await import('mpegts.js')).default
  if (!mpegts.isSupported()) throw new Error('This browser has no Media Source Extensions for HTTP-FLV.')
  // Its informational logging would fill the browser console; errors
  // reach onFail.
  mpegts.LoggingControl.applyConfig({ enableAll: false, enableError: false, enableWarn: false })
  const p = mpegts.createPlayer(
    { type: 'flv', isLive: true, url, cors: true },
    {
      enableWorker: false,
      enableStashBuffer: false,
      liveBufferLatencyChasing: true,
      liveBufferLatencyMaxLatency: 2.5,
      liveBufferLatencyMinRemain: 0.5,
      autoCleanupSourceBuffer: true,
      lazyLoad: false,
    },
  )
  p.on(mpegts.Events.ERROR, (type: string, detail: string) => onFail(`${type}: ${detail}`))
  p.on(mpegts.Events.LOADING_COMPLETE, () => onFail('the stream ended'))
  p.attachMediaElement(video)
  p.load()
  void Promise.resolve(p.play()).catch(() => {})
  return {
    destroy() {
      try {
        p.pause()
        p.unload()
        p.detachMediaElement()
      } finally {
        p.destroy()
      }
    },
  }
}

async function hls(url: string, video: HTMLVideoElement, onFail: (why: string) => void): Promise<Engine> {
  const Hls = (await import('hls.js/light')).default
  if (!Hls.isSupported()) {
    if (video.canPlayType('application/vnd.apple.mpegurl')) return native(url, video, onFail)
    throw new Error('This browser plays neither HLS nor Media Source Extensions.')
  }
  const h = new Hls({ enableWorker: false, liveSyncDurationCount: 2, manifestLoadingMaxRetry: 2, levelLoadingMaxRetry: 2 })
  h.on(Hls.Events.ERROR, (_e, data) => {
    if (data.fatal) onFail(`${data.type}: ${data.details}`)
  })
  h.loadSource(url)
  h.attachMedia(video)
  void video.play().catch(() => {})
  return { destroy: () => h.destroy() }
}

function native(url: string, video: HTMLVideoElement, onFail: (why: string) => void): Engine {
  const fail = () => onFail(`media error ${video.error?.code ?? ''} ${video.error?.message ?? ''}`.trim())
  const ended = () => onFail('the stream ended')
  video.addEventListener('error', fail)
  video.addEventListener('ended', ended)
  video.src = url
  void video.play().catch(() => {})
  return {
    destroy() {
      video.removeEventListener('error', fail)
      video.removeEventListener('ended', ended)
      video.removeAttribute('src')
      video.load()
    },
  }
}
