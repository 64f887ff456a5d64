import { createApp } from 'vue'
import { createPinia } from 'pinia'
import App from './App.vue'
import { router } from './router'
import { i18n } from './i18n'
import './styles.css'
import { chatSessionOf, dropPrefetch, prefetchSession } from './api/prefetch'

// The bundle has been fetched and evaluated (docs/benchmarks.md's cold-tab breakdown).
performance.mark('weft:app-start')
const app = createApp(App).use(createPinia()).use(i18n).use(router)
// Opened on a session: its events start loading now, with the Chat view's
// code (api/prefetch.ts).
const opened = chatSessionOf(location.pathname)
if (opened) {
  // The view's code too: the router would ask for it only after the shell
  // has mounted, a waterfall of the mount's length on a cold load.
  void import('./views/chat/ChatView.vue')
  prefetchSession(opened)
  // Not adopted by the Chat view (the tab went elsewhere first): stop it.
  router.afterEach((to) => { if (to.name !== 'chat') dropPrefetch() })
}
app.mount('#app')
