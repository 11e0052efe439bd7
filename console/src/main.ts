import { createApp } from 'vue'
import App from './App.vue'
import { router } from './router'
import { whenSessionEnds } from './session'
import './style.css'

whenSessionEnds(() => {
  if (router.currentRoute.value.name !== 'login') {
    void router.push({ name: 'login', query: { next: router.currentRoute.value.fullPath } })
  }
})

createApp(App).use(router).mount('#app')
