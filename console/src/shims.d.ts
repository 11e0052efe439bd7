// hls.js's light build (no subtitles, alternate audio or DRM, which live
// views do not use) has the full build's types.
declare module 'hls.js/light' {
  export { default } from 'hls.js'
}
