import { defineConfig } from 'vite'
import vue from '@vitejs/plugin-vue'

// The build is committed (dist/) and embedded in the svc binary; `make test`
// rebuilds it and fails when the result differs, so it must be
// deterministic: content-hashed names, no timestamps, no source maps.
export default defineConfig({
  plugins: [vue()],
  base: '/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    target: 'es2022',
    reportCompressedSize: false,
    chunkSizeWarningLimit: 1024,
  },
  server: {
    // `npm run dev` proxies the API to a running `svc dev`.
    proxy: {
      '/api': { target: process.env.SVC_API ?? 'http://127.0.0.1:8080', ws: true },
      '/health': process.env.SVC_API ?? 'http://127.0.0.1:8080',
    },
  },
})
